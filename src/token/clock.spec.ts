import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from '@jest/globals';
import { MAX_TIMER_MS, SystemClock } from './clock.js';

describe('SystemClock.sleep', () => {
  it('a wait longer than a Node timer can hold (a token lifetime over 24.8 days) does not fire early', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const stop = new AbortController();
    let woke = false;
    const sleeping = new SystemClock().sleep(MAX_TIMER_MS + 60_000, stop.signal).then(() => (woke = true));
    try {
      await delay(200);
      expect(woke).toBe(false);
    } finally {
      stop.abort();
      await sleeping;
      process.off('warning', onWarning);
    }
    expect(woke).toBe(true);
    expect(warnings).toEqual([]);
  });

  it('a wait of no sane length waits nothing, once', async () => {
    const stop = new AbortController();
    await new SystemClock().sleep(Number.NaN, stop.signal);
    await new SystemClock().sleep(-5, stop.signal);
    expect(stop.signal.aborted).toBe(false);
  });
});
