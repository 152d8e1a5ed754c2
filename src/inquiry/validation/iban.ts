import { electronicFormatIBAN, isValidIBAN } from 'ibantools';
import { toAsciiDigits } from './digits.js';

/** Letters, digits and ASCII spaces only: anything else (dashes, dots, tabs inside) is refused. */
const IBAN_CHARS = /^[A-Za-z0-9 ]+$/;
const IRANIAN_IBAN = /^IR[0-9]{24}$/;

/**
 * Returns the IBAN (شبا) in electronic format, `IR` + 24 digits, when it is a valid Iranian
 * IBAN, else `null`. Surrounding whitespace is trimmed, inner spaces removed, lower case
 * accepted, Persian/Arabic-Indic digits converted. The checksum is ISO 13616 mod-97, checked
 * by ibantools' `isValidIBAN` (which also checks the country's length and BBAN shape).
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
  return isValidIBAN(iban) ? iban : null;
}
