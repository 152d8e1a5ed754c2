import { Injectable } from '@nestjs/common';
import type { InquiryRecord } from './inquiry-record.js';
import { InquiryStore } from './inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';

/** The least time between two looks at a leader's lease: a lease about to end is not polled in a burst. */
const LEASE_LOOK_MIN_MS = 50;

/**
 * A joined inquiry's wait for the one in flight (docs/api.md §2, "Joins"): held on its settled
 * notice (from any replica) before its record is read, as a long-poll is, so a settlement just
 * before the hold is seen at once. While it waits, Redis is asked only when the leader's lease
 * ends (a few seconds apart, AnswerStore.keepAlive), so a dead leader holds it one lease at most.
 * Shutdown does not end it: the drain waits for the joined inquiry, which is answered from its
 * leader (test/join-edges.e2e.spec.ts, 'a joined waiter is answered from its leader during the drain').
 */
@Injectable()
export class LeaderWait {
  constructor(
    private readonly waits: InquiryWaits,
    private readonly records: InquiryStore,
  ) {}

  /**
   * The leader's record once it has settled, or undefined when it did not by `untilMs` (epoch
   * ms, the waiter's own limit), when its lease lapsed (a dead leader: its lease is looked at
   * again when it ends, `leaseEndsMs`, through `leaseLeft`), when no slot was free
   * (INQUIRY_MAX_HELD_WAITS), when its record cannot be read, or when it was refused before
   * writing one (its release is announced: `announce`). Undefined means: go on alone.
   */
  async settled(
    leader: { trackId: string; leaseEndsMs: number },
    untilMs: number,
    leaseLeft: () => Promise<number>,
  ): Promise<InquiryRecord | undefined> {
    const wait = await this.waits.hold(leader.trackId, { join: true });
    if (!wait) return undefined;
    try {
      const now = await this.read(leader.trackId);
      if (now && now.status !== 'pending') return now;
      let lookAt = leader.leaseEndsMs;
      // Each turn after the first waits at least LEASE_LOOK_MIN_MS, shutdown or not, and untilMs
      // ends the loop (test/join-edges.e2e.spec.ts, 'a waiter that joins once shutdown began').
      while (!(await wait.until(Math.min(lookAt, untilMs) - Date.now()))) {
        if (Date.now() >= untilMs) return undefined;
        const left = await leaseLeft().catch(() => 0);
        // A reply that is no positive number (NaN included) is a lapsed lease: never a 0 ms timer (leader-wait.spec.ts).
        if (!(left > 0)) break;
        lookAt = Date.now() + Math.max(left, LEASE_LOOK_MIN_MS);
      }
      // Settled, or its lease gone (it may have settled just now): its record says which.
      const after = await this.read(leader.trackId);
      return after && after.status !== 'pending' ? after : undefined;
    } finally {
      wait.release();
    }
  }

  /** Wakes the waiters of a leader that ends without a settlement (refused before it was recorded). */
  announce(trackId: string): Promise<void> {
    return this.waits.announce(trackId);
  }

  private read(trackId: string): Promise<InquiryRecord | null> {
    return this.records.get(trackId).catch(() => null);
  }
}
