import { digitsArToEn, digitsFaToEn } from '@persian-tools/persian-tools';

/**
 * Converts Persian (U+06F0–U+06F9, `۰–۹`) and Arabic-Indic (U+0660–U+0669, `٠–٩`) digits to
 * ASCII `0–9`, leaving every other character untouched.
 *
 * persian-tools' `digitsFaToEn` / `digitsArToEn` do exactly one table lookup per digit
 * (they throw a TypeError on non-strings, which callers never pass here).
 */
export function toAsciiDigits(s: string): string {
  return digitsArToEn(digitsFaToEn(s));
}
