import type { FieldType } from '../field-type.js';

/** Bounds of `maxLength` (docs/api.md §10). */
export const TEXT_LENGTH = { min: 1, max: 200 } as const;

/**
 * C0, DEL and C1 controls, lone surrogates (no character: the upstream would receive broken
 * UTF-16; with the u flag a pair is one code point, never matched), line and paragraph
 * separators, and the bidi embeddings, overrides and
 * isolates (U+202A–U+202E, U+2066–U+2069: they reorder what a reader of the record sees): never
 * part of a name or an address. The joiners and the bidi marks stay: Persian writes with them.
 */
const CONTROL = /[\p{Cc}\p{Cs}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;

/**
 * `text`: at most `maxLength` characters (code points) after NFC, no control characters; sent
 * trimmed and NFC. Digits are kept as written: a name or an address is not a number.
 */
export function textType(maxLength: number): FieldType {
  return {
    normalise: (input) => input.trim().normalize('NFC'),
    accepts: (normalised) => normalised.length > 0 && !CONTROL.test(normalised) && [...normalised].length <= maxLength,
    expected: `must be 1 to ${maxLength} characters without control or bidi override characters`,
    pattern: `^[^\\p{Cc}\\p{Cs}\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]{1,${maxLength}}$`,
    example: [...'نمونه'].slice(0, maxLength).join(''),
  };
}
