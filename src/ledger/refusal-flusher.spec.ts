import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { RefusalTally, type RefusalCount } from '../caller-auth/refusal-tally.js';
import { RefusalFlusher } from './refusal-flusher.js';

const NOON = Date.parse('2031-05-04T12:00:00Z');

/** A writer that records what it is given, and fails while `failing` is set. */
function sink() {
  const written: RefusalCount[][] = [];
  const state = { failing: false, calls: 0 };
  const write = (counts: readonly RefusalCount[]) => {
    state.calls++;
    if (state.failing)
      return Promise.reject(Object.assign(new Error('postgres://user:secret@db down'), { code: 'ECONNREFUSED' }));
    written.push([...counts]);
    return Promise.resolve();
  };
  return { written, state, write };
}

describe('RefusalFlusher', () => {
  it('writes the tally and empties it; a failed write keeps the counts for the next flush', async () => {
    const tally = new RefusalTally('UTC', new Registry());
    const { written, state, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    tally.count('shop', 'iban', 'budget', NOON);
    state.failing = true;
    await flusher.flush();
    expect(written).toEqual([]);
    expect(tally.size).toBe(1);
    tally.count('shop', 'iban', 'budget', NOON);
    state.failing = false;
    await flusher.flush();
    expect(written).toEqual([[{ day: '2031-05-04', clientId: 'shop', operation: 'iban', reason: 'budget', count: 2 }]]);
    expect(tally.size).toBe(0);
    await flusher.flush();
    expect(state.calls).toBe(2);
  });

  it('flushes early when the tally nears its cap, without waiting for the interval', async () => {
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { written, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    flusher.onApplicationBootstrap();
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await flusher.stop();
    expect(written[0]).toHaveLength(8);
    expect(written).toHaveLength(1);
  });

  it('flushes once more at shutdown, after a flush in progress, and no timed flush follows', async () => {
    const tally = new RefusalTally('UTC', new Registry());
    const { written, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 1);
    flusher.onApplicationBootstrap();
    tally.count('shop', 'shahkar', 'budget', NOON);
    const first = flusher.flush();
    tally.count('shop', 'shahkar', 'quota', NOON);
    await flusher.stop();
    await first;
    expect(written.flat().map((c) => c.reason)).toEqual(['budget', 'quota']);
    expect(tally.size).toBe(0);
    // The 1 ms timer is gone: a refusal after shutdown waits for an explicit flush.
    const batches = written.length;
    tally.count('shop', 'shahkar', 'quota', NOON);
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toHaveLength(batches);
  });
});
