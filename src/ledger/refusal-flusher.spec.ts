import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Registry } from 'prom-client';
import { RefusalTally, type RefusalCount } from '../caller-auth/refusal-tally.js';
import { REFUSAL_SHUTDOWN_FLUSH_MS, RefusalFlusher } from './refusal-flusher.js';

const NOON = Date.parse('2031-05-04T12:00:00Z');
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/**
 * The flusher's log of the running test, captured instead of printed: a test that provokes an
 * error line takes and asserts it (takeErrors); one left over fails the test that logged it.
 */
const logged: Record<'error' | 'warn' | 'log', string[]> = { error: [], warn: [], log: [] };
const takeErrors = () => logged.error.splice(0);
beforeEach(() => {
  for (const level of ['error', 'warn', 'log'] as const) {
    logged[level] = [];
    jest
      .spyOn(Logger.prototype, level)
      .mockImplementation((message: unknown) => void logged[level].push(String(message)));
  }
});

afterEach(() => {
  jest.useRealTimers();
  jest.restoreAllMocks();
  expect(logged.error).toEqual([]);
});

/** The error line of a shutdown whose last flush failed: `count` refusal counts lost. */
const lost = (count: number) => `${count} refusal count(s) not written at shutdown (the write failed): lost`;

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

/** A database that is down: each write fails one event-loop turn later (ECONNREFUSED comes fast). */
function downDatabase() {
  const state = { calls: 0 };
  const write = async (_counts: readonly RefusalCount[]) => {
    state.calls++;
    await new Promise((resolve) => setImmediate(resolve));
    throw Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
  };
  return { state, write };
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

  it('flushes once more at shutdown, after the flush in progress', async () => {
    const tally = new RefusalTally('UTC', new Registry());
    const written: string[][] = [];
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const flusher = new RefusalFlusher(
      tally,
      async (counts) => {
        await slow;
        written.push(counts.map((c) => c.reason));
      },
      60_000,
    );
    tally.count('shop', 'shahkar', 'budget', NOON);
    const first = flusher.flush();
    await turns(1);
    tally.count('shop', 'shahkar', 'quota', NOON);
    const stopped = flusher.stop();
    await turns(1);
    expect(written).toEqual([]);
    release();
    await Promise.all([first, stopped]);
    expect(written).toEqual([['budget'], ['quota']]);
    expect(tally.size).toBe(0);
  });
});

describe('RefusalFlusher during a database outage with a near-full tally', () => {
  it('does not retry in a loop when each failed flush gives back past the near-full mark', async () => {
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { state, write } = downDatabase();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    flusher.onApplicationBootstrap();
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await turns(50);
    const retries = state.calls;
    await flusher.stop();
    // Its last flush failed too: the counts are lost, and said so.
    expect(takeErrors()).toEqual([lost(8)]);
    // One early flush (and the timed ones every 60 s): not one per event-loop turn.
    expect(retries).toBeLessThanOrEqual(2);
  });

  it('writes nothing after stop() resolved (the shutdown step: the database closes next)', async () => {
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { state, write } = downDatabase();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    flusher.onApplicationBootstrap();
    await flusher.stop();
    // Its last flush failed too: the counts are lost, and said so.
    expect(takeErrors()).toEqual([lost(8)]);
    const atStop = state.calls;
    await turns(20);
    expect(state.calls).toBe(atStop);
  });

  it('a write that fails at once (a closed PGlite, an ended pool) does not run flush after flush without yielding to the event loop', async () => {
    const tally = new RefusalTally('UTC', new Registry(), 10);
    let calls = 0;
    // Fails at once 1 000 times, then succeeds (so that the test ends even if the loop is there).
    const write = (_counts: readonly RefusalCount[]) =>
      ++calls <= 1_000 ? Promise.reject(new Error('the embedded ledger is closed')) : Promise.resolve();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    flusher.onApplicationBootstrap();
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await new Promise((resolve) => setImmediate(resolve));
    const beforeOneTurn = calls;
    await flusher.stop();
    // Its last flush failed too: the counts are lost, and said so.
    expect(takeErrors()).toEqual([lost(8)]);
    expect(beforeOneTurn).toBeLessThanOrEqual(1);
  });

  it('while the last flush failed, new refusals reaching the near-full mark wait for the next timed flush', async () => {
    jest.useFakeTimers();
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { state, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 1_000);
    flusher.onApplicationBootstrap();
    state.failing = true;
    for (let i = 0; i < 3; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await jest.advanceTimersByTimeAsync(1_000);
    expect([state.calls, tally.size]).toEqual([1, 3]);
    for (let i = 3; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await jest.advanceTimersByTimeAsync(999);
    expect(state.calls).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(state.calls).toBe(2);
    await flusher.stop();
    // Its last flush failed too: the counts are lost, and said so.
    expect(takeErrors()).toEqual([lost(8)]);
  });

  it('after a failure, the next try is the next timed flush (the backoff), then early flushes resume', async () => {
    jest.useFakeTimers();
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { written, state, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 1_000);
    flusher.onApplicationBootstrap();
    state.failing = true;
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await jest.advanceTimersByTimeAsync(999);
    expect(state.calls).toBe(1);
    state.failing = false;
    await jest.advanceTimersByTimeAsync(1);
    expect(written.map((batch) => batch.length)).toEqual([8]);
    for (let i = 0; i < 8; i++) tally.count(`d${i}`, 'shahkar', 'quota', NOON);
    await jest.advanceTimersByTimeAsync(0);
    expect(written.map((batch) => batch.length)).toEqual([8, 8]);
    await flusher.stop();
  });
});

describe('RefusalFlusher, early and timed flushes', () => {
  it('flushes early at the near-full mark, before any stop() or timed flush', async () => {
    const tally = new RefusalTally('UTC', new Registry(), 10);
    const { written, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 60_000);
    flusher.onApplicationBootstrap();
    for (let i = 0; i < 8; i++) tally.count(`c${i}`, 'shahkar', 'quota', NOON);
    await turns(2);
    expect(written.map((batch) => batch.length)).toEqual([8]);
    await flusher.stop();
  });

  it('no timed flush after stop(): the interval passes and nothing is written', async () => {
    jest.useFakeTimers();
    const tally = new RefusalTally('UTC', new Registry());
    const { written, write } = sink();
    const flusher = new RefusalFlusher(tally, write, 1_000);
    flusher.onApplicationBootstrap();
    tally.count('shop', 'shahkar', 'budget', NOON);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(written).toHaveLength(1);
    await flusher.stop();
    tally.count('shop', 'shahkar', 'quota', NOON);
    await jest.advanceTimersByTimeAsync(5_000);
    expect(written).toHaveLength(1);
  });
});

describe('RefusalFlusher at shutdown against a database that does not answer', () => {
  it('stop() ends within a bound (the other flush steps take at most 5 s; the grace period counts on it)', async () => {
    jest.useFakeTimers();
    const tally = new RefusalTally('UTC', new Registry());
    // A connection that hangs (until statement_timeout, 60 s, on a PostgreSQL server).
    const flusher = new RefusalFlusher(tally, () => new Promise<void>(() => undefined), 60_000);
    tally.count('shop', 'shahkar', 'budget', NOON);
    let stopped = false;
    void flusher.stop().then(() => (stopped = true));
    await jest.advanceTimersByTimeAsync(REFUSAL_SHUTDOWN_FLUSH_MS - 1);
    expect(stopped).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    expect(stopped).toBe(true);
    // What was not written is said, by its count only.
    expect(takeErrors()).toEqual([
      `1 refusal count(s) not written at shutdown (no answer within ${REFUSAL_SHUTDOWN_FLUSH_MS} ms): lost`,
    ]);
  });
});
