import { describe, expect, it } from '@jest/globals';
import { redactText } from '../observability/redact.js';
import { upstreamMessageOf } from './ledger-entry.js';

// What the ledger keeps of an upstream failure's message: redactText (inquiry-outcome.ts) then upstreamMessageOf.
const kept = (message: string) => upstreamMessageOf(redactText(message));

describe('the upstream message kept for years in the ledger', () => {
  it.each([
    'National code 0499-370899 does not match',
    'National code 049 937 0899 does not match',
    'Mobile 0912 123 4567 does not match',
    'IBAN IR06-2960-0000-0010-0324-2000-01 unknown',
    'کد ملی ۰۴۹-۹۳۷۰۸۹-۹ نامعتبر',
  ])('keeps no identifier digits of %s', (message) => {
    expect(kept(message)).not.toMatch(/\p{Nd}{3}[\s-]?\p{Nd}{3}/u);
  });
});
