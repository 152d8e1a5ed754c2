import { describe, expect, it } from '@jest/globals';
import { parsePrefer } from './prefer.js';

describe('parsePrefer (RFC 7240)', () => {
  it.each([
    [undefined, { respondAsync: false }],
    ['', { respondAsync: false }],
    ['respond-async', { respondAsync: true }],
    ['respond-async, wait=5', { respondAsync: true, waitSeconds: 5 }],
    ['Respond-Async,WAIT=0', { respondAsync: true, waitSeconds: 0 }],
    ['wait="7"', { respondAsync: false, waitSeconds: 7 }],
    ['wait=600', { respondAsync: false, waitSeconds: 60 }],
    ['respond-async; foo=bar, wait=3; x', { respondAsync: true, waitSeconds: 3 }],
    ['return=minimal, handling=lenient', { respondAsync: false }],
    ['wait=-1', { respondAsync: false }],
    ['wait=1.5', { respondAsync: false }],
    ['wait=soon', { respondAsync: false }],
    ['wait=2, wait=9', { respondAsync: false, waitSeconds: 2 }],
    [['respond-async', 'wait=4'], { respondAsync: true, waitSeconds: 4 }],
    [',,;=,', { respondAsync: false }],
  ])('%j → %j', (header, expected) => {
    expect(parsePrefer(header)).toEqual(expected);
  });
});
