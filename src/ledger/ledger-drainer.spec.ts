import { describe, expect, it } from '@jest/globals';
import { GatewayMetrics } from '../observability/metrics.js';
import { LedgerDrainer } from './ledger-drainer.js';
import { LedgerMetrics } from './ledger-metrics.js';

/** A queue that is empty, or whose reads wait for `release` (then fail, as with PostgreSQL down). */
function parts(drain: boolean) {
  let entered!: () => void;
  const reading = new Promise<void>((resolve) => (entered = resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const queue = {
    claimOverdue: () => Promise.resolve(0),
    backlog: () => Promise.resolve({ depth: 7, oldestAgeSeconds: 3 }),
    read: async () => {
      entered();
      await released;
      throw new Error('PostgreSQL down');
    },
  };
  const db = { close: () => Promise.resolve(), outage: null };
  const metrics = new LedgerMetrics(new GatewayMetrics());
  const config = { get: () => ({ retentionDays: 1826, resultRetentionDays: 90, drain }) };
  const drainer = new LedgerDrainer(config as never, db as never, queue as never, {} as never, metrics);
  return { drainer, metrics, reading, release };
}

/** Whether `promise` settles before a timer of `ms` (a bound far above the few ms it takes). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('LedgerDrainer', () => {
  it('stops at once when stop() comes during a batch, instead of waiting out the backoff that follows', async () => {
    const { drainer, reading, release } = parts(true);
    drainer.onApplicationBootstrap();
    await reading;
    const stopped = drainer.stop();
    release(); // the batch fails: the loop would now back off for 500 ms
    expect(await settlesWithin(stopped, 400)).toBe(true);
  });

  it('with LEDGER_DRAIN=false reads nothing, measures the backlog and stops at once', async () => {
    const { drainer, metrics, reading } = parts(false);
    let read = false;
    void reading.then(() => (read = true));
    drainer.onApplicationBootstrap();
    for (let i = 0; i < 50 && (await metrics.queueDepth.get()).values[0]?.value !== 7; i += 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await metrics.queueDepth.get()).values[0]?.value).toBe(7);
    expect((await metrics.queueOldestAge.get()).values[0]?.value).toBe(3);
    expect(await settlesWithin(drainer.stop(), 400)).toBe(true);
    expect(read).toBe(false);
  });
});
