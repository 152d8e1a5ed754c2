import type { FieldType } from '../field-type.js';

/** Bounds of `maxLength` (docs/api.md §10). */
export const TEXT_LENGTH = { min: 1, max: 200 } as const;

/** C0, DEL and C1 controls, line and paragraph separators: never part of a name or an address. */
const CONTROL = /[\p{Cc}\u2028\u2029]/u;

/**
 * `text`: at most `maxLength` characters (code points) after NFC, no control characters; sent
 * trimmed and NFC. Digits are kept as written: a name or an address is not a number.
 */
export function textType(maxLength: number): FieldType {
  return {
    normalise: (input) => input.trim().normalize('NFC'),
    accepts: (normalised) => normalised.length > 0 && !CONTROL.test(normalised) && [...normalised].length <= maxLength,
    expected: `must be 1 to ${maxLength} characters without control characters`,
    pattern: `^[^\\p{Cc}\\u2028\\u2029]{1,${maxLength}}$`,
    example: [...'نمونه'].slice(0, maxLength).join(''),
  };
}
