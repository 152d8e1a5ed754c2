import { Injectable } from '@nestjs/common';
import type { InquiryRecord } from './inquiry-record.js';
import { InquiryStore } from './inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';

/**
 * A joined inquiry's wait for the one in flight (docs/api.md §2, "Joins"): held on its settled
 * notice (from any replica) before its record is read, as a long-poll is, so a settlement just
 * before the hold is seen at once. Nothing is sent to Redis while it waits.
 */
@Injectable()
export class LeaderWait {
  constructor(
    private readonly waits: InquiryWaits,
    private readonly records: InquiryStore,
  ) {}

  /**
   * The leader's record once it has settled, or undefined when it did not within `untilMs`
   * (epoch ms: the earlier of its deadline and the waiter's), when no slot was free
   * (INQUIRY_MAX_HELD_WAITS), when its record cannot be read, or when it was refused before
   * writing one (its release is announced: `announce`). Undefined means: go on alone.
   */
  async settled(leaderTrackId: string, untilMs: number): Promise<InquiryRecord | undefined> {
    const wait = await this.waits.hold(leaderTrackId);
    if (!wait) return undefined;
    try {
      const now = await this.read(leaderTrackId);
      if (now && now.status !== 'pending') return now;
      if (!(await wait.until(untilMs - Date.now()))) return undefined;
      const after = await this.read(leaderTrackId);
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
