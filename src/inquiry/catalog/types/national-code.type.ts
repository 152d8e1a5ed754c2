import { NATIONAL_CODE_PATTERN } from '../validators/input-patterns.js';
import { normaliseNationalCode } from '../validators/national-code.js';
import { fromNormaliser } from '../field-type.js';

/** `nationalCode`: as Shahkar's (docs/api.md §2), on today's validator. */
export const nationalCodeType = fromNormaliser(normaliseNationalCode, {
  expected: 'must be a 10-digit Iranian national code with a valid check digit',
  pattern: NATIONAL_CODE_PATTERN,
  example: '0499370899',
});
