import type { ClaimedDelivery, DeliveryOutcome, WebhookOutbox } from './webhook-outbox.js';

/** Outcomes written in one statement at most (a batch's JSON stays small). */
const MAX_BATCH = 256;

interface Pending {
  claim: ClaimedDelivery;
  outcome: DeliveryOutcome;
  resolve: (written: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * The dispatcher's outcomes, written together: one UPDATE for every attempt that ended while the
 * previous one was in flight (or in the same turn of the event loop), instead of one each. A
 * statement's round trip was most of a delivery's CPU after the POST itself (docs/performance.md,
 * "Webhooks"). Each caller still learns whether its own outcome was written (its lease held).
 */
export class WebhookOutcomes {
  private queued: Pending[] = [];
  private writing: Promise<void> | undefined;

  constructor(private readonly outbox: WebhookOutbox) {}

  write(claim: ClaimedDelivery, outcome: DeliveryOutcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queued.push({ claim, outcome, resolve, reject });
      this.writing ??= this.writeQueued();
    });
  }

  // Ends when the queue is empty; each pass waits for one statement, and takes what queued meanwhile.
  private async writeQueued(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queued.length > 0) {
      const batch: Pending[] = [];
      const later: Pending[] = [];
      const ids = new Set<string>();
      for (const pending of this.queued) {
        // One row once per statement (WebhookOutbox.settleMany); a second outcome of it goes next.
        if (batch.length < MAX_BATCH && !ids.has(pending.claim.id)) {
          ids.add(pending.claim.id);
          batch.push(pending);
        } else later.push(pending);
      }
      this.queued = later;
      try {
        const written = await this.outbox.settleMany(batch);
        for (const pending of batch) pending.resolve(written.has(pending.claim.id));
      } catch (error) {
        for (const pending of batch) pending.reject(error);
      }
    }
    this.writing = undefined;
  }
}
