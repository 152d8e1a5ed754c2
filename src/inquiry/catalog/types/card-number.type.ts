import { ANY_DIGIT, withoutSeparators, type FieldType } from '../field-type.js';

const SIXTEEN_DIGITS = /^[0-9]{16}$/;

/** `cardNumber`: 16 digits passing the Luhn check; spaces and dashes allowed, sent as 16 digits. */
export const cardNumberType: FieldType = {
  normalise: withoutSeparators,
  accepts: (normalised) => SIXTEEN_DIGITS.test(normalised) && passesLuhn(normalised),
  expected: 'must be a 16-digit card number with a valid Luhn check digit (spaces and dashes allowed)',
  pattern: `^\\s*(?:${ANY_DIGIT}[\\s-]*){15}${ANY_DIGIT}\\s*$`,
  example: '6037990000000006',
};

/** ISO/IEC 7812 Luhn: every second digit from the right doubled (minus 9 above 9), sum mod 10 = 0. */
function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}
