import { describe, expect, it } from '@jest/globals';
import { ProblemException } from '../problem/problem.js';
import { MAX_DELTA_SECONDS, parseCacheControl, type ReuseDirectives } from './cache-control.js';

const NONE: ReuseDirectives = {
  staleIfErrorSeconds: 0,
  keep: false,
  noCache: false,
  noStore: false,
  onlyIfCached: false,
};

describe('Cache-Control request directives (docs/api.md §2, "Reusing answers")', () => {
  it.each<[string, string | string[] | undefined, Partial<ReuseDirectives>]>([
    ['absent', undefined, {}],
    ['empty', '', {}],
    ['max-age', 'max-age=600', { maxAgeSeconds: 600, keep: true }],
    ['max-age=0 (joins only)', 'max-age=0', { maxAgeSeconds: 0, keep: true }],
    ['a quoted value', 'max-age="600"', { maxAgeSeconds: 600, keep: true }],
    [
      'names in any case, spaces around',
      '  Max-Age=60 ,STALE-IF-ERROR=30 ',
      { maxAgeSeconds: 60, staleIfErrorSeconds: 30, keep: true },
    ],
    ['leading zeros', 'max-age=007', { maxAgeSeconds: 7, keep: true }],
    ['2^31 as is', 'max-age=2147483648', { maxAgeSeconds: MAX_DELTA_SECONDS, keep: true }],
    ['above 2^31 taken as 2^31', 'max-age=2147483649', { maxAgeSeconds: MAX_DELTA_SECONDS, keep: true }],
    ['far above 2^31', `max-age=${'9'.repeat(40)}`, { maxAgeSeconds: MAX_DELTA_SECONDS, keep: true }],
    [
      'stale-if-error alone implies max-age=0',
      'stale-if-error=300',
      { maxAgeSeconds: 0, staleIfErrorSeconds: 300, keep: true },
    ],
    ['no-cache wins over max-age, and never joins', 'max-age=600, no-cache', { noCache: true, keep: true }],
    ['no-cache alone', 'no-cache', { noCache: true }],
    ['no-store: reused, not kept', 'max-age=60, no-store', { maxAgeSeconds: 60, noStore: true }],
    ['only-if-cached', 'max-age=60, only-if-cached', { maxAgeSeconds: 60, keep: true, onlyIfCached: true }],
    ['only-if-cached alone reuses nothing', 'only-if-cached', { onlyIfCached: true }],
    ['several header lines are one list', ['max-age=60', 'no-store'], { maxAgeSeconds: 60, noStore: true }],
    [
      'unknown directives ignored, quoted commas too',
      'foo, bar="a,\\"b, max-age=1", max-age=9, must-understand',
      { maxAgeSeconds: 9, keep: true },
    ],
    ['of a directive given twice, the first counts', 'max-age=5, max-age=500', { maxAgeSeconds: 5, keep: true }],
    ['empty members skipped', ',,max-age=3,,', { maxAgeSeconds: 3, keep: true }],
  ])('%s', (_name, header, expected) => {
    expect(parseCacheControl(header)).toEqual({ ...NONE, ...expected });
  });

  it.each([
    'max-age=-1',
    'max-age=1.5',
    'max-age=abc',
    'max-age',
    'max-age=',
    'max-age=""',
    'max-age=6 0',
    'stale-if-error=-5',
    'max-age=5, max-age=x',
    'max-age=١٢',
  ])('%s is 400 validation_failed naming Cache-Control', (header) => {
    let error: unknown;
    try {
      parseCacheControl(header);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ProblemException);
    const body = (error as ProblemException).toBody();
    expect(body.status).toBe(400);
    expect(body.code).toBe('validation_failed');
    expect(body.errors).toEqual([{ field: 'Cache-Control', message: expect.stringContaining('whole number') }]);
  });
});
