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

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    // Unreferenced: a pending renewal timer never keeps a stopping process alive.
    return delay(Math.max(0, ms), undefined, { signal, ref: false }).catch(() => undefined);
  }
}
