import { verifyIranianNationalId } from '@persian-tools/persian-tools';
import { toAsciiDigits } from './digits.js';

const TEN_DIGITS = /^[0-9]{10}$/;
const REPEATED_DIGITS = /^([0-9])\1{9}$/;

/**
 * Returns the national code (کد ملی) as its 10 ASCII digits when it is valid, else `null`.
 *
 * Valid means: after trimming surrounding whitespace and converting Persian/Arabic-Indic
 * digits, exactly 10 digits; not one of the ten repeated-digit codes; and a correct check
 * digit (weights 10..2, mod 11).
 *
 * The exact-10-digit check is ours on purpose: persian-tools' `verifyIranianNationalId`
 * left-pads 8- and 9-digit inputs with zeros and, for inputs longer than 10 characters,
 * silently checks only the LAST 10 (`"10499370899"` passes). It is called with
 * `checkPrefix: false` because its default (`true`) also requires the first three digits
 * to be a known city prefix, which the contract does not ask for. It additionally rejects
 * codes whose digits 4–9 are all zero (never issued).
 */
export function normaliseNationalCode(input: string): string | null {
  if (typeof input !== 'string') return null;
  const code = toAsciiDigits(input.trim());
  if (!TEN_DIGITS.test(code) || REPEATED_DIGITS.test(code)) return null;
  return verifyIranianNationalId(code, { checkPrefix: false }) ? code : null;
}
