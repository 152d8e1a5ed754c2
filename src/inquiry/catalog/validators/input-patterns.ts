/**
 * The accepted input shapes as ECMA-262 patterns, for the OpenAPI document (generated clients
 * and form validation can check them before sending). Each matches exactly the strings that the
 * normaliser of its field accepts before the checksum: surrounding whitespace (as `trim()`
 * removes it), Persian and Arabic-Indic digits (as `toAsciiDigits` converts them). The check
 * digit and the IBAN checksum cannot be expressed as a pattern. input-patterns.spec.ts holds
 * each pattern to its normaliser.
 */

/** One digit in ASCII, Persian (U+06F0–U+06F9) or Arabic-Indic (U+0660–U+0669). */
const D = '[0-9\u06F0-\u06F9\u0660-\u0669]';
const digit = (n: number) => `[${n}${String.fromCharCode(0x06f0 + n)}${String.fromCharCode(0x0660 + n)}]`;

/** normaliseNationalCode: 10 digits. */
export const NATIONAL_CODE_PATTERN = `^\\s*${D}{10}\\s*$`;

/**
 * normaliseIranianMobile: `9` + 9 digits, after an optional `+98`, `0098`, `98` or `0`, with
 * spaces and dashes (`s`) between any two characters.
 */
const [d0, d8, d9] = [digit(0), digit(8), digit(9)];
const s = '[ -]*';
const prefix = `\\+${s}${d9}${s}${d8}|${d0}${s}${d0}${s}${d9}${s}${d8}|${d9}${s}${d8}|${d0}`;
export const MOBILE_PATTERN = `^\\s*(?:(?:${prefix})${s})?${d9}(?:${s}${D}){9}\\s*$`;

/** normaliseIban: `IR` (any case) and 24 digits, with ASCII spaces anywhere inside. */
export const IBAN_PATTERN = `^\\s*[Ii] *[Rr](?: *${D}){24}\\s*$`;
