import { electronicFormatIBAN } from 'ibantools';
import { toAsciiDigits } from './digits.js';

/** Letters, digits and ASCII spaces only: anything else (dashes, dots, tabs inside) is refused. */
const IBAN_CHARS = /^[A-Za-z0-9 ]+$/;
const IRANIAN_IBAN = /^IR[0-9]{24}$/;

/**
 * Returns the IBAN (شبا) in electronic format, `IR` + 24 digits, when it is a valid Iranian
 * IBAN, else `null`. Surrounding whitespace is trimmed, inner spaces removed, lower case
 * accepted, Persian/Arabic-Indic digits converted. The checksum is ISO 13616 mod-97
 * (`hasIranianChecksum`, the rule of ibantools' `isValidIBAN` for IR, whose length and BBAN
 * shape IRANIAN_IBAN already holds).
 *
 * ibantools' `electronicFormatIBAN` also strips dashes; we refuse them before it runs, as the
 * contract only promises spaces.
 */
export function normaliseIban(input: string): string | null {
  if (typeof input !== 'string') return null;
  const raw = toAsciiDigits(input.trim());
  if (!IBAN_CHARS.test(raw)) return null;
  const iban = electronicFormatIBAN(raw);
  if (iban === null || !IRANIAN_IBAN.test(iban)) return null;
  return hasIranianChecksum(iban) ? iban : null;
}

/** `I` and `R` as ISO 13616 turns letters into digits (A = 10 … Z = 35), then check digits 00. */
const COUNTRY_DIGITS_AND_ZERO_CHECK = '182700';

/**
 * The check digits of `IR` + 24 digits, as ibantools' `isValidIBAN` checks them: 98 minus the
 * remainder mod 97 of BBAN + country + `00` (iban.spec.ts, 'decides as ibantools' isValidIBAN').
 * Digit by digit on a number below 97 × 10, rather than the library's slices and parses: the
 * validator runs on every IBAN inquiry.
 */
function hasIranianChecksum(iban: string): boolean {
  let rest = 0;
  for (let i = 4; i < iban.length; i++) rest = (rest * 10 + iban.charCodeAt(i) - 48) % 97;
  for (let i = 0; i < COUNTRY_DIGITS_AND_ZERO_CHECK.length; i++) {
    rest = (rest * 10 + COUNTRY_DIGITS_AND_ZERO_CHECK.charCodeAt(i) - 48) % 97;
  }
  return 98 - rest === (iban.charCodeAt(2) - 48) * 10 + (iban.charCodeAt(3) - 48);
}
