import { describe, expect, it } from '@jest/globals';
import type { Caller } from '../caller-auth/caller.js';
import { stamp, type InquiryRequest } from './inquiry-in-flight.js';

const CALLER = { clientId: 'svc-a' } as Caller;
const IBAN: InquiryRequest = {
  operation: 'iban',
  route: '/v1/kyc/iban',
  requestHandlingType: 'standard',
  fields: { iban: 'IR000000000000000000000000' },
};

describe('stamp', () => {
  it('gives every inquiry its own UUID v4 trackId', () => {
    const [a, b] = [
      stamp(CALLER, IBAN, undefined, undefined, undefined),
      stamp(CALLER, IBAN, 'k', undefined, undefined),
    ];
    expect(a.trackId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.trackId).not.toBe(b.trackId);
  });

  it('fingerprints the request whatever its fields order, and tells another route or handling type apart', () => {
    const shahkar = { mobileNumber: '09120000000', nationalCode: '0000000000' };
    const fingerprint = (request: InquiryRequest) => stamp(CALLER, request, 'k', undefined, undefined).fingerprint;
    const base = { ...IBAN, operation: 'shahkar' as const, route: '/v1/kyc/shahkar', fields: shahkar };
    const reordered = { nationalCode: shahkar.nationalCode, mobileNumber: shahkar.mobileNumber };
    expect(fingerprint({ ...base, fields: reordered })).toBe(fingerprint(base));
    expect(fingerprint({ ...base, route: '/v1/kyc/other' })).not.toBe(fingerprint(base));
    expect(fingerprint({ ...base, requestHandlingType: 'advanced' })).not.toBe(fingerprint(base));
  });
});
