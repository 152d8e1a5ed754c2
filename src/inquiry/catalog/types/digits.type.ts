import { ANY_DIGIT, withoutSeparators, type FieldType } from '../field-type.js';

/** Bounds of `minLength` and `maxLength` (docs/api.md §10). */
export const DIGITS_LENGTH = { min: 1, max: 64 } as const;

/** `digits`: `minLength`–`maxLength` digits (spaces and dashes allowed), sent as the digits. */
export function digitsType(minLength: number, maxLength: number): FieldType {
  const shape = new RegExp(`^[0-9]{${minLength},${maxLength}}$`);
  const count = minLength === maxLength ? `${minLength}` : `${minLength} to ${maxLength}`;
  return {
    normalise: withoutSeparators,
    accepts: (normalised) => shape.test(normalised),
    expected: `must be ${count} digits`,
    pattern: `^\\s*(?:${ANY_DIGIT}[\\s-]*){${minLength},${maxLength}}\\s*$`,
    example: '1234567890123456789012345678901234567890123456789012345678901234'.slice(0, maxLength),
  };
}
