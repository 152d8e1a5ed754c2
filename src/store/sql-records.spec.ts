import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { ExpiredRowSweeper, SWEEP_EVERY_MS, SweeperLifecycle, type RecordsDatabase } from './sql-records.js';

/** A database that counts the sweeper's statements (a DELETE per table when nothing is expired, then one VACUUM); `held` delays them. */
function counting() {
  const seen = { statements: 0, held: null as Promise<void> | null };
  const records: RecordsDatabase = {
    ready: () => Promise.resolve(),
    db: {
      query: async <R>() => {
        seen.statements += 1;
        await seen.held;
        return [{ n: 0 }] as R[];
      },
    },
  };
  return { records, seen };
}

const TABLES = 4;
/** A sweep with nothing expired: a DELETE a table, then the VACUUM of them all. */
const SWEEP = TABLES + 1;

afterEach(() => {
  jest.useRealTimers();
});

describe('ExpiredRowSweeper', () => {
  it('sweeps every SWEEP_EVERY_MS from the module init, and never again once the module is destroyed', async () => {
    jest.useFakeTimers();
    const { records, seen } = counting();
    const lifecycle = new SweeperLifecycle(new ExpiredRowSweeper(records));
    lifecycle.onModuleInit();
    await jest.advanceTimersByTimeAsync(SWEEP_EVERY_MS * 2);
    expect(seen.statements).toBe(2 * SWEEP);
    await lifecycle.onModuleDestroy();
    await jest.advanceTimersByTimeAsync(SWEEP_EVERY_MS * 3);
    expect(seen.statements).toBe(2 * SWEEP);
  });

  it('a second start replaces the first timer: one sweep a period, none after stop', async () => {
    jest.useFakeTimers();
    const { records, seen } = counting();
    const sweeper = new ExpiredRowSweeper(records);
    sweeper.start();
    sweeper.start();
    await jest.advanceTimersByTimeAsync(SWEEP_EVERY_MS);
    expect(seen.statements).toBe(SWEEP);
    await sweeper.stop();
    await jest.advanceTimersByTimeAsync(SWEEP_EVERY_MS * 3);
    expect(seen.statements).toBe(SWEEP);
  });

  it('stop() resolves once the sweep in progress has ended', async () => {
    const { records, seen } = counting();
    let release = () => {};
    seen.held = new Promise((resolve) => (release = resolve));
    const sweeper = new ExpiredRowSweeper(records);
    const sweeping = sweeper.sweep();
    let stopped = false;
    const stopping = sweeper.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(await sweeping).toBe(0);
    expect(seen.statements).toBe(SWEEP);
  });
});
