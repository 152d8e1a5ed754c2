import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { SettledNotices } from './settled-notices.js';

/** One held wait for a record to leave `pending`. */
export interface HeldWait {
  /**
   * Resolves true when a settlement notice for the trackId came, false when `ms` passed first
   * or `gone` aborted (the caller hung up: its slot is not kept for the rest of the wait).
   */
  until(ms: number, gone?: AbortSignal): Promise<boolean>;
  /** Frees the slot; call it once the answer is decided (idempotent). */
  release(): void;
}

/** A watched trackId: its waiters, its subscription, and whether that subscription failed. */
interface Watched {
  waiters: Set<() => void>;
  watching: Promise<void>;
  failed: boolean;
}

/** No held wait is longer than this (the longest `Prefer: wait` is 60 s, prefer.ts). */
const MAX_WAIT_MS = 120_000;

/** How long a caller refused for want of a slot should wait before trying again. */
const REFUSED_RETRY_AFTER_SECONDS = '1';

/**
 * The long-polls this replica holds (`Prefer: wait`, and a keyed async retry), woken by
 * settlement notices from any replica (settled-notices.ts): a waiter costs a closure and a
 * timer here, and no Redis connection or command until it wakes. At most `INQUIRY_MAX_HELD_WAITS`
 * are held; one more that would have to wait is refused (429 `rate_limited`, `Retry-After: 1`)
 * rather than let a burst of idle connections grow the heap without bound. At shutdown every held
 * long-poll is woken, so its caller is answered with the record as it stands instead of delaying
 * the drain; a join's wait (LeaderWait) is not: it is part of an inquiry the drain waits for, and
 * its answer is its leader's (test/join-edges.e2e.spec.ts).
 */
@Injectable()
export class InquiryWaits implements OnModuleInit {
  /** Waiters by trackId; a trackId is watched (subscribed) while it has one. */
  private readonly waiting = new Map<string, Watched>();
  /** The wakes of held long-polls (not joins): what shutdown wakes. */
  private readonly longPolls = new Set<() => void>();
  private readonly maxHeld: number;
  private held = 0;
  private closing = false;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly notices: SettledNotices,
    private readonly metrics: GatewayMetrics,
  ) {
    this.maxHeld = config.get('inquiryWaits', { infer: true }).maxHeld;
    for (const outcome of ['woken', 'timeout', 'refused']) metrics.inquiryWaits.inc({ outcome }, 0);
    metrics.inquiryWaitsHeld.set(0);
  }

  onModuleInit(): void {
    this.notices.listen((trackId) => this.wake(trackId));
  }

  /** Tells every replica's waiters that this record has left `pending` (best effort). */
  announce(trackId: string): Promise<void> {
    return this.notices.publish(trackId).catch(() => undefined);
  }

  /**
   * Takes a slot and listens for `trackId` (resolving once subscribed): hold first, then read
   * the record, so a settlement between the read and the wait still wakes it. Null when every
   * slot is taken: the caller answers at once if it can, else throws `refusal()`. `join`: the
   * wait of a joined inquiry for its leader, which shutdown neither ends nor refuses (the drain
   * waits for its inquiry); a long-poll held once shutdown has begun ends at once.
   */
  async hold(trackId: string, { join = false } = {}): Promise<HeldWait | null> {
    if (this.closing && !join) return { until: () => Promise.resolve(false), release: () => undefined };
    if (this.held >= this.maxHeld) return null;
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    let entry = this.waiting.get(trackId);
    if (!entry) this.waiting.set(trackId, (entry = { waiters: new Set(), watching: Promise.resolve(), failed: true }));
    // The first waiter subscribes; a SUBSCRIBE that failed is not shared by later waiters (they
    // would only ever time out): the next one tries again.
    if (entry.failed) entry.watching = this.watch(trackId, entry);
    const { waiters } = entry;
    waiters.add(wake);
    if (!join) this.longPolls.add(wake);
    this.held += 1;
    this.metrics.inquiryWaitsHeld.set(this.held);
    let released = false;
    // Subscribed before the caller reads the record (SettledNotices.watch).
    await entry.watching;
    return {
      until: (ms, gone) =>
        new Promise<boolean>((resolve) => {
          const hungUp = () => {
            clearTimeout(timer);
            resolve(false);
          };
          // `ms` comes from a stored record's deadline too: a value that is no time waits nothing.
          const timer = setTimeout(
            () => {
              gone?.removeEventListener('abort', hungUp);
              resolve(false);
            },
            Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_WAIT_MS) : 0,
          );
          if (gone?.aborted) hungUp();
          gone?.addEventListener('abort', hungUp, { once: true });
          void woken.then(() => {
            clearTimeout(timer);
            gone?.removeEventListener('abort', hungUp);
            resolve(true);
          });
        }).then((settled) => {
          this.metrics.inquiryWaits.inc({ outcome: settled ? 'woken' : 'timeout' });
          return settled;
        }),
      release: () => {
        if (released) return;
        released = true;
        waiters.delete(wake);
        this.longPolls.delete(wake);
        if (waiters.size === 0 && this.waiting.get(trackId) === entry) {
          this.waiting.delete(trackId);
          this.notices.unwatch(trackId);
        }
        this.held -= 1;
        this.metrics.inquiryWaitsHeld.set(this.held);
      },
    };
  }

  /** The answer to a wait that found no slot: 429, retry in a second (counted). */
  refusal(): ProblemException {
    this.metrics.inquiryWaits.inc({ outcome: 'refused' });
    return new ProblemException(
      'rate_limited',
      `This replica already holds its maximum of ${this.maxHeld} waiting requests; retry shortly.`,
      { headers: { [RETRY_AFTER_HEADER]: REFUSED_RETRY_AFTER_SECONDS } },
    );
  }

  /** Subscribes; a failure marks the entry so the next waiter subscribes again. */
  private watch(trackId: string, entry: Watched): Promise<void> {
    entry.failed = false;
    return this.notices.watch(trackId).then((subscribed) => {
      if (!subscribed) entry.failed = true;
    });
  }

  private wake(trackId: string): void {
    for (const wake of this.waiting.get(trackId)?.waiters ?? []) wake();
  }

  /**
   * A step of the shutdown sequence (src/http/shutdown-sequence.ts), before the drain: held
   * long-polls answer now with the record as it stands; new ones do not wait. Joins wait on:
   * the drain waits for them, and their leaders' settlements still wake them.
   */
  releaseAll(): void {
    this.closing = true;
    for (const wake of this.longPolls) wake();
  }
}
