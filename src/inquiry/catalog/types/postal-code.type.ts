import { ANY_DIGIT, tidy, type FieldType } from '../field-type.js';

const TEN_DIGITS = /^[0-9]{10}$/;
/** Spaces anywhere between digits and at most one dash (`13145-76543`). */
const WRITTEN = /^[0-9 ]+(?:-[0-9 ]+)?$/;

/** `postalCode`: 10 digits; spaces and a dash allowed; sent as the 10 digits. */
export const postalCodeType: FieldType = {
  normalise: (input) => {
    const written = tidy(input);
    return WRITTEN.test(written) ? written.replace(/[ -]/g, '') : written;
  },
  accepts: (normalised) => TEN_DIGITS.test(normalised),
  expected: 'must be a 10-digit postal code (spaces and one dash allowed)',
  pattern: `^\\s*[ ]*(?:${ANY_DIGIT}[ ]*){1,9}-?(?:[ ]*${ANY_DIGIT}){1,9}[ ]*\\s*$`,
  example: '1314576543',
};
