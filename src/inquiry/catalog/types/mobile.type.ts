import { MOBILE_PATTERN } from '../validators/input-patterns.js';
import { normaliseIranianMobile } from '../validators/mobile.js';
import { fromNormaliser } from '../field-type.js';

/** `mobile`: as Shahkar's mobileNumber (docs/api.md §2), sent as `09…`, on today's validator. */
export const mobileType = fromNormaliser(normaliseIranianMobile, {
  expected:
    'must be an Iranian mobile number: 09xxxxxxxxx, +989xxxxxxxxx, 989xxxxxxxxx or 9xxxxxxxxx (spaces and dashes allowed)',
  pattern: MOBILE_PATTERN,
  example: '09121234567',
});
