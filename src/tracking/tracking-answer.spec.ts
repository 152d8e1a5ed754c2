import { describe, expect, it } from '@jest/globals';
import { readAnswer } from './tracking-answer.js';
import type { TrackingConfig } from '../config/tracking-config.js';
import { backoffSeconds, MAX_BACKOFF_SECONDS, roundMs } from './tracker.js';

const STRINGS: TrackingConfig = {
  path: '/api/v5/Report/RequestStatus',
  method: 'POST',
  trackIdAt: 'body',
  charged: { pointer: '/data/status', yes: ['Charged'], no: ['NotCharged', 'Failed'] },
  notFound: 'no',
  afterSeconds: 120,
  perMinute: 60,
};
const BOOLEANS: TrackingConfig = {
  ...STRINGS,
  charged: { pointer: '/charged', yes: [true], no: [false] },
  notFound: 'unknown',
};
const json = (value: unknown) => JSON.stringify(value);

describe('readAnswer: what one answer of the tracking service teaches', () => {
  it.each([
    ['a yes value', STRINGS, 200, json({ data: { status: 'Charged' } }), { result: 'yes', learned: 'yes' }],
    ['a no value', STRINGS, 200, json({ data: { status: 'Failed' } }), { result: 'no', learned: 'no' }],
    ['true', BOOLEANS, 200, json({ charged: true }), { result: 'yes', learned: 'yes' }],
    ['false', BOOLEANS, 200, json({ charged: false }), { result: 'no', learned: 'no' }],
    [
      'the string "true" where booleans are listed',
      BOOLEANS,
      200,
      json({ charged: 'true' }),
      { result: 'unrecognised' },
    ],
    ['another value', STRINGS, 200, json({ data: { status: 'Processing' } }), { result: 'unrecognised' }],
    ['an object at the pointer', STRINGS, 200, json({ data: { status: { a: 1 } } }), { result: 'unrecognised' }],
    ['no value', STRINGS, 200, json({ data: {} }), { result: 'no_value' }],
    ['null', BOOLEANS, 200, json({ charged: null }), { result: 'no_value' }],
    ['an answer that is not an object', STRINGS, 200, json('Charged'), { result: 'no_value' }],
    [
      'an inherited property',
      { ...STRINGS, charged: { ...STRINGS.charged, pointer: '/constructor' } },
      200,
      '{}',
      { result: 'unrecognised' },
    ],
    ['a body that is not JSON', STRINGS, 200, '{"data":', { result: 'error' }],
    ['a 500', STRINGS, 500, json({ data: { status: 'Charged' } }), { result: 'error' }],
    ['a 404 meaning not charged', STRINGS, 404, '', { result: 'not_found', learned: 'no' }],
    ['a 404 meaning ask again', BOOLEANS, 404, '', { result: 'not_found' }],
  ])('%s', (_name, config, status, body, expected) => {
    expect(readAnswer(config, status, body)).toEqual(expected);
  });

  it('reads an escaped pointer (RFC 6901: ~1 is /, ~0 is ~)', () => {
    const config = { ...STRINGS, charged: { ...STRINGS.charged, pointer: '/a~1b/c~0d' } };
    expect(readAnswer(config, 200, json({ 'a/b': { 'c~d': 'Charged' } }))).toEqual({ result: 'yes', learned: 'yes' });
  });
});

describe('the tracker timings', () => {
  it('backs off by doubling from afterSeconds, at most MAX_BACKOFF_SECONDS, whatever the count', () => {
    expect([1, 2, 3].map((n) => backoffSeconds(10, n))).toEqual([20, 40, 80]);
    expect(backoffSeconds(10, 1_000)).toBe(MAX_BACKOFF_SECONDS);
  });

  it('looks for due unknowns every afterSeconds, within 1 to 5 seconds', () => {
    expect([1, 3, 120].map(roundMs)).toEqual([1000, 3000, 5000]);
  });
});
