import { describe, expect, it } from '@jest/globals';
import { parseCacheControl } from './cache-control.js';
import { reuseAllowance } from './reuse-allowance.js';

const DAY = { maxAgeSeconds: 86_400, share: 'subject' as const };

describe('reuse allowance: the caller’s directives within the operator’s maxAgeSeconds', () => {
  it.each([
    ['no Cache-Control', undefined, undefined],
    ['no-cache wins', 'max-age=60, no-cache', undefined],
    ['max-age', 'max-age=600', { maxAgeMs: 600_000, staleMs: 0, join: true, lead: true }],
    [
      'max-age above the operator’s',
      'max-age=2147483648',
      { maxAgeMs: 86_400_000, staleMs: 0, join: true, lead: true },
    ],
    ['max-age=0 joins only', 'max-age=0', { maxAgeMs: 0, staleMs: 0, join: true, lead: true }],
    [
      'stale-if-error',
      'max-age=600, stale-if-error=300',
      { maxAgeMs: 600_000, staleMs: 300_000, join: true, lead: true },
    ],
    [
      'stale-if-error capped by the operator',
      'max-age=86000, stale-if-error=3600',
      { maxAgeMs: 86_000_000, staleMs: 400_000, join: true, lead: true },
    ],
    ['stale-if-error alone', 'stale-if-error=60', { maxAgeMs: 0, staleMs: 60_000, join: true, lead: true }],
    [
      'only-if-cached neither joins nor leads',
      'max-age=60, only-if-cached',
      { maxAgeMs: 60_000, staleMs: 0, join: false, lead: false },
    ],
  ])('%s', (_name, header, expected) => {
    expect(reuseAllowance(parseCacheControl(header), DAY)).toEqual(expected);
  });
});
