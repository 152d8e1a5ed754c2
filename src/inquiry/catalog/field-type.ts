import { toAsciiDigits } from './validators/digits.js';

/**
 * One type of field an operation may take (docs/api.md §10): how a value is normalised, and
 * whether the normalised value is accepted. `normalise` never throws and is idempotent
 * (field-types.property.spec.ts): it is the value sent upstream when accepted, and the
 * reuse question's part. `expected` is the message of a refusal; it never holds the value.
 */
export interface FieldType {
  normalise(input: string): string;
  accepts(normalised: string): boolean;
  /** What is expected, as the 400's message for this field ("must be …"). */
  readonly expected: string;
  /** The accepted input as an ECMA-262 pattern, for the OpenAPI document. */
  readonly pattern: string;
  /** A valid example, for the OpenAPI document (never a real person's). */
  readonly example: string;
}

/**
 * ASCII digits, surrounding whitespace trimmed, then NFC: the part every type shares. NFC last,
 * as trimming can leave a decomposed sequence behind (field-types.property.spec.ts).
 */
export function tidy(input: string): string {
  return toAsciiDigits(input).trim().normalize('NFC');
}

/** Spaces and dashes between digits, as people type numbers. */
const SEPARATORS = /[\s-]/g;

/** tidy, then spaces and dashes removed (numbers written in groups), NFC again over the joins. */
export function withoutSeparators(input: string): string {
  return tidy(input).replace(SEPARATORS, '').normalize('NFC');
}

/** One digit in ASCII, Persian (U+06F0–U+06F9) or Arabic-Indic (U+0660–U+0669), for patterns. */
export const ANY_DIGIT = '[0-9\u06F0-\u06F9\u0660-\u0669]';

/** A type built on one of today's normalisers (null when refused): its value, else the input tidied. */
export function fromNormaliser(
  normaliser: (input: string) => string | null,
  parts: Omit<FieldType, 'normalise' | 'accepts'>,
): FieldType {
  return {
    ...parts,
    normalise: (input) => normaliser(tidy(input)) ?? tidy(input),
    accepts: (normalised) => normaliser(normalised) === normalised,
  };
}
