import { toAsciiDigits } from './digits.js';

/**
 * `09` + 9 digits, optionally written with the country code: `+98`, `0098`, `98`, or with no
 * prefix at all (`9xxxxxxxxx`). The lengths (10, 11, 12, 13, 14) make the prefix
 * unambiguous. `[0-9]` rather than `\d` so that only ASCII digits match (they already are,
 * after `toAsciiDigits`).
 *
 * Why not persian-tools' `isPhoneNumberValid` / `phoneNumberNormalizer`: they only accept
 * operator prefixes from a built-in list (e.g. `0963…`, newly allocated ranges, are
 * rejected), which is stricter than the contract ("an Iranian mobile number, `09xxxxxxxxx`")
 * and would go stale as new ranges are assigned; the normaliser also throws instead of
 * returning a value. The shape check below is all the contract asks for.
 */
const MOBILE = /^(?:\+98|0098|98|0)?(9[0-9]{9})$/;

/** Spaces and dashes between characters, as people type numbers (`0912 123 4567`, `0912-123-4567`). */
const SEPARATORS = /[ -]/g;

/**
 * Returns the mobile number as `09xxxxxxxxx` (11 ASCII digits) when it is an Iranian mobile
 * number, else `null`. Surrounding whitespace is trimmed; ASCII spaces and dashes between its
 * characters are removed (as an IBAN's spaces are); a leading or trailing dash, brackets, dots
 * or other whitespace inside are not accepted.
 */
export function normaliseIranianMobile(input: string): string | null {
  if (typeof input !== 'string') return null;
  const raw = toAsciiDigits(input.trim());
  if (raw.startsWith('-') || raw.endsWith('-')) return null;
  const match = MOBILE.exec(raw.replace(SEPARATORS, ''));
  return match ? `0${match[1]}` : null;
}
