import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import type { BudgetAction } from '../ledger/ledger-queue.js';
import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';

/** Inquiry records by trackId. Implementations: Redis and in-process memory. */
export abstract class InquiryStore {
  /**
   * True when this store writes the ledger's duty and entry, with the budget reservation and
   * its commit or release, in the record's own command (standalone Redis: one script may touch
   * every key). Read once, by the module's wiring, to choose the InquiryBooks that match.
   */
  readonly accountsWithRecord: boolean = false;

  /**
   * Writes a new record; fails (StoreUnavailableError) rather than let an inquiry go
   * unrecorded. When `accountsWithRecord`: with its duty, and the reservation's answer
   * (refused: nothing is written).
   */
  abstract create(
    record: InquiryRecord,
    ttlSeconds: number,
    reservation?: ReserveRequest,
  ): Promise<ReserveResult | undefined>;
  /**
   * Writes the `pending` record of an inquiry that joined an identical one in flight (docs/api.md
   * §2, "Joins"): nothing is sent under it while it waits, so it owes the ledger nothing and
   * reserves nothing; plain, even when `accountsWithRecord`. Fails as `create` does.
   */
  abstract createJoined(record: InquiryRecord, ttlSeconds: number): Promise<void>;
  /**
   * Replaces an existing record with its settled state (keeping its expiry); one round trip.
   * With `ttlSeconds`, a record that is gone (a Redis restart without persistence lost it) is
   * written again with that expiry, so a settlement owed across an outage still lands. When
   * `accountsWithRecord`: with the ledger's entry and the budget action.
   */
  abstract settle(record: InquiryRecord, ttlSeconds?: number, budget?: BudgetAction): Promise<void>;
  /**
   * Marks a `pending` record `unknown` (its request was abandoned mid-call), only while it is
   * still `pending`: a settlement that lands meanwhile is kept, never overwritten. Returns the
   * record as it now stands (null when there is none).
   */
  abstract concludeUnknown(trackId: string, completedAt: string): Promise<InquiryRecord | null>;
  /** Deletes the record of a request refused before anything was sent (its create may land late). */
  abstract discard(trackId: string): Promise<void>;
  abstract get(trackId: string): Promise<InquiryRecord | null>;
}

/** Idempotency-Key claims, per client. Implementations: Redis and in-process memory. */
export abstract class IdempotencyStore {
  /**
   * Atomically claims `key` for this caller scope (client, or client and end user): returns null when the claim is now ours, or the
   * claim somebody made earlier. One round trip, so concurrent requests cannot both win.
   */
  abstract claim(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
    ttlSeconds: number,
  ): Promise<IdempotencyClaim | null>;
  /**
   * Stores the final answer for replay, only while the claim is still the in-flight one made
   * for the same trackId: the first answer stored is the one every retry gets. Resolves true
   * when this answer was stored, false when the claim was no longer that in-flight one.
   */
  /** The claim under `key` for this scope, or null: a read only (a claim named before a rotation, IdempotencyService). */
  abstract peek(scope: string, keySha256: string): Promise<IdempotencyClaim | null>;
  abstract complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<boolean>;
  /** Frees a claim whose request provably reached nobody, so a retry may run it afresh. */
  abstract release(scope: string, keySha256: string, trackId: string): Promise<void>;
}
