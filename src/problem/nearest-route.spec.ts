import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { CALLER_PATHS, nearestCallerPath } from './nearest-route.js';

describe('nearestCallerPath', () => {
  it('names the caller path a typo meant', () => {
    expect(nearestCallerPath('/v1/kyc/shakar')).toBe('/v1/kyc/shahkar');
    expect(nearestCallerPath('/v1/kyc/IBAN')).toBe('/v1/kyc/iban');
    expect(nearestCallerPath('/v1/kyc/ibna')).toBe('/v1/kyc/iban');
    expect(nearestCallerPath('/v1/inquirys/6f1c7c3e-1111-4e2e-9c1a-000000000000')).toBe('/v1/inquiries/{trackId}');
    expect(nearestCallerPath('/health/readyy')).toBe('/health/ready');
    expect(nearestCallerPath('/v1/kyc/card-to-ibn', ['card-to-iban'])).toBe('/v1/kyc/card-to-iban');
  });

  it('names nothing for a path that is nobody’s typo', () => {
    expect(nearestCallerPath('/wp-admin/setup.php')).toBeUndefined();
    expect(nearestCallerPath('/v1/kyc/passport')).toBeUndefined();
    expect(nearestCallerPath(`/v1/kyc/${'x'.repeat(200)}`)).toBeUndefined();
  });

  it('lists exactly the caller paths of the contract (docs/openapi.json)', () => {
    const document = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
      paths: Record<string, unknown>;
    };
    const callers = Object.keys(document.paths).filter((path) => /^\/(v1|health)\//.test(path));
    expect([...CALLER_PATHS].sort()).toEqual(callers.sort());
  });
});
