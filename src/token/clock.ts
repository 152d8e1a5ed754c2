import { setTimeout as delay } from 'node:timers/promises';

/**
 * Time as the token renewal sees it: the moment, and a wait that can be cut short. Injected so
 * that the renewal protocol's rules are unit-tested with a fake clock, in milliseconds
 * (token-renewal.spec.ts), while the gateway runs on the system clock.
 */
export abstract class Clock {
  /** Epoch milliseconds. */
  abstract now(): number;

  /** Resolves after `ms`, or as soon as `signal` aborts; never rejects. */
  abstract sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }

  /**
   * Waits in steps of at most `MAX_TIMER_MS`, re-armed against the wall clock: Node fires a
   * longer timer after 1 ms (TimeoutOverflowWarning), which once put renewal for a token
   * lifetime over 24.8 days in a tight loop. `ms` not a number waits nothing.
   */
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    const until = Date.now() + (Number.isNaN(ms) ? 0 : ms);
    for (let left = until - Date.now(); left > 0 && !signal.aborted; left = until - Date.now()) {
      // Unreferenced: a pending renewal timer never keeps a stopping process alive.
      await delay(Math.min(left, MAX_TIMER_MS), undefined, { signal, ref: false }).catch(() => undefined);
    }
  }
}

/** The longest delay Node's timers take as given (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;
