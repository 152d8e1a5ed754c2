import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import type { BudgetAction, LedgerQueue } from '../ledger/ledger-queue.js';
import type { InquiryRecord } from './inquiry-record.js';
import type { InquiryStore } from './inquiry.store.js';

/**
 * What an inquiry writes about itself, whichever store holds it: the record, the ledger's duty
 * then its entry (docs/architecture.md, "The ledger"), and the budget reservation then its
 * commit or release. Two ways, chosen once by the module's wiring (inquiry.module.ts) after what
 * the record store can do: `BooksInRecordScript` (standalone Redis, Sentinel) or
 * `BooksBesideRecord` (Redis Cluster, in process).
 */
export abstract class InquiryBooks {
  constructor(
    protected readonly records: InquiryStore,
    protected readonly ledger: LedgerQueue,
  ) {}

  /**
   * Writes the `pending` record, its duty and (with a budget) the reservation. Resolves with
   * the reservation's answer (undefined without one); rejects when a write failed.
   * `replacesJoined`: a waiter gone on alone; its record from `openJoined` is deleted in the same
   * event-loop turn, just before, so both ride one socket write and its trackId never reads 404
   * between them (test/join-edges.e2e.spec.ts, 'never reads 404').
   */
  async open(
    record: InquiryRecord,
    ttlSeconds: number,
    reservation?: ReserveRequest,
    replacesJoined = false,
  ): Promise<ReserveResult | undefined> {
    // A delete that fails leaves the record there: the create then fails too (503, nothing sent).
    const replaced = replacesJoined ? this.records.discard(record.trackId).catch(() => undefined) : undefined;
    const [, opened] = await Promise.all([replaced, this.write(record, ttlSeconds, reservation)]);
    return opened;
  }

  /** The opening's writes: the record, its duty and the reservation, as `open` says. */
  protected abstract write(
    record: InquiryRecord,
    ttlSeconds: number,
    reservation?: ReserveRequest,
  ): Promise<ReserveResult | undefined>;

  /**
   * Writes the `pending` record of a waiter (docs/api.md §2, "Joins"): no duty, no reservation,
   * as nothing is sent under it while it waits. Settled by `settle` when it is answered from its
   * leader; replaced by its own opening's when it goes on alone (`open`, `replacesJoined`).
   */
  openJoined(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    return this.records.createJoined(record, ttlSeconds);
  }

  /** Deletes a waiter's record that `openJoined` may have written when it failed (nothing was sent, nothing owed). */
  discardJoined(trackId: string): Promise<void> {
    return this.records.discard(trackId);
  }

  /** Writes the settled record (again, with `ttlSeconds`, if it is gone), its entry, and the budget move. */
  abstract settle(record: InquiryRecord, ttlSeconds: number, budget?: BudgetAction): Promise<void>;

  /**
   * What undoes an opening that was refused by a budget or failed (`failed`), for Settlements to
   * write: a write that timed out may still land later, so the deletes are sent after it. Undefined
   * when nothing can have been written.
   */
  abstract undo(trackId: string, failed: boolean, reserved: boolean): (() => Promise<void>) | undefined;

  /** Deletes the record, the duty and (`reserved`) releases the reservation, whichever landed. */
  protected discardAll(trackId: string, reserved: boolean): () => Promise<void> {
    return async () => {
      await Promise.all([this.records.discard(trackId), this.ledger.discard(trackId, reserved)]);
    };
  }
}

/**
 * Standalone Redis and Sentinel: the record's own script writes the duty and the reservation
 * with it, and the entry and the budget move with its settlement (RedisInquiryStore over
 * RedisLedgerQueue's scripts). A refused reservation writes nothing.
 */
export class BooksInRecordScript extends InquiryBooks {
  protected write(
    record: InquiryRecord,
    ttlSeconds: number,
    reservation?: ReserveRequest,
  ): Promise<ReserveResult | undefined> {
    return this.records.create(record, ttlSeconds, reservation);
  }

  settle(record: InquiryRecord, ttlSeconds: number, budget?: BudgetAction): Promise<void> {
    return this.records.settle(record, ttlSeconds, budget);
  }

  undo(trackId: string, failed: boolean, reserved: boolean): (() => Promise<void>) | undefined {
    return failed ? this.discardAll(trackId, reserved) : undefined;
  }
}

/**
 * Redis Cluster (the record and the accounting keys are in different slots) and the in-process
 * store: the duty's script (which reserves first) and the record's write are issued in the same
 * event-loop turn, the duty's first; store/write-batching.ts sends them in one socket write
 * (test/redis-write-batching.integration.spec.ts).
 * A refused reservation writes no duty, but the record beside it is written.
 */
export class BooksBesideRecord extends InquiryBooks {
  protected async write(
    record: InquiryRecord,
    ttlSeconds: number,
    reservation?: ReserveRequest,
  ): Promise<ReserveResult | undefined> {
    const [owed, created] = await Promise.allSettled([
      this.ledger.owe(record, reservation),
      this.records.create(record, ttlSeconds),
    ]);
    if (created.status === 'rejected') throw created.reason;
    if (owed.status === 'rejected') throw owed.reason;
    return owed.value;
  }

  async settle(record: InquiryRecord, ttlSeconds: number, budget?: BudgetAction): Promise<void> {
    await Promise.all([this.records.settle(record, ttlSeconds), this.ledger.settled(record, budget)]);
  }

  undo(trackId: string, failed: boolean, reserved: boolean): (() => Promise<void>) | undefined {
    if (failed) return this.discardAll(trackId, reserved);
    return async () => {
      await this.records.discard(trackId);
    };
  }
}
