import { IBAN_PATTERN } from '../validators/input-patterns.js';
import { normaliseIban } from '../validators/iban.js';
import { fromNormaliser } from '../field-type.js';

/** `iban`: as the IBAN inquiry's (docs/api.md §2), on today's validator. */
export const ibanType = fromNormaliser(normaliseIban, {
  expected:
    'must be an Iranian IBAN: IR followed by 24 digits with a valid ISO 13616 checksum (spaces and lower case allowed)',
  pattern: IBAN_PATTERN,
  example: 'IR062960000000100324200001',
});
