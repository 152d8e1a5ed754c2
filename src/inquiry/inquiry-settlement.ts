import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { BudgetAction } from '../budget/budget.store.js';
import type { AppConfig } from '../config/app-config.js';
import type { ReuseSettlement } from './answer-keeping.js';
import { IdempotencyService } from './idempotency.service.js';
import { InquiryBooks } from './inquiry-books.js';
import type { InquiryResponse, OpenInquiry } from './inquiry-in-flight.js';
import type { InquiryOutcome } from './inquiry-outcome.js';
import { recordExpiry, type InquiryRecord, type StoredResponse } from './inquiry-record.js';
import { InquiryWaits } from './inquiry-waits.js';
import { Settlements } from './settlements.js';

/**
 * The step after the call: the record settled (with the ledger's entry and the budget move:
 * InquiryBooks) and the key's answer stored, both sent at once. A store failure does not hold
 * the answer back: the writes are owed (Settlements) until stored or the record has expired
 * (test/settlements.e2e.spec.ts, 'reaches the store once Redis is back (restarted empty)').
 */
@Injectable()
export class InquirySettlement {
  private readonly ttlSeconds: number;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly books: InquiryBooks,
    private readonly settlements: Settlements,
    private readonly waits: InquiryWaits,
    private readonly idempotency: IdempotencyService,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
  }

  /**
   * The answer, once both writes are stored or owed (Settlements.write takes a store's failure),
   * and reuse's write (the answer kept, or its registration in flight released) is done: issued
   * in the same turn, so it rides the same socket write (docs/performance.md).
   */
  async settle(
    { record, trackId, key }: OpenInquiry,
    outcome: InquiryOutcome,
    reuse?: ReuseSettlement,
  ): Promise<InquiryResponse> {
    const settled = settledRecord(record, outcome);
    if (reuse?.reusedFrom) {
      settled.reusedFrom = reuse.reusedFrom.trackId;
      if (reuse.reusedFrom.hidden) settled.reusedFromHidden = true;
    }
    const until = recordExpiry(record, this.ttlSeconds);
    const ttlLeft = () => Math.ceil((until - Date.now()) / 1000);
    const response: StoredResponse = reuse?.response
      ? { ...reuse.response, trackId }
      : reuse?.headers
        ? { ...outcome.response, trackId, headers: { ...outcome.response.headers, ...reuse.headers } }
        : { ...outcome.response, trackId };
    // `failed` was not charged (docs/upstream-api.md §4.4 rule 9): its reservation is released;
    // `unknown` stays spent, held for a reconciliation to move.
    const budget = record.reservation ? budgetAction(outcome) : undefined;
    await Promise.all([
      // One owed write: the record and its ledger entry stored, or retried, together; waiters
      // on any replica are told once it is written.
      this.settlements.write(
        `record of ${trackId}`,
        async () => {
          await this.books.settle(settled, ttlLeft(), budget);
          await this.waits.announce(trackId);
        },
        until,
      ),
      // A key whose request cannot have been charged is released instead, so a retry runs afresh;
      // but a stale answer served in its place is the answer the caller got: its key keeps it
      // (test/reuse-path.e2e.spec.ts, 'a stale answer served after a 402 is replayed by its key').
      key &&
        this.settlements.write(
          `idempotency result of ${trackId}`,
          () =>
            outcome.notCharged && !reuse?.response
              ? this.idempotency.release(key)
              : this.idempotency.complete(key, response),
          until,
        ),
      reuse?.write?.(),
    ]);
    return { ...response, replayed: false };
  }
}

/** A reservation's settlement by the inquiry's outcome (its record's `charged`): `possibly` is kept as spent, held for a reconciliation. */
function budgetAction({ status, notCharged }: InquiryOutcome): BudgetAction {
  if (status === 'succeeded') return 'commit';
  // Charged `no` gives the units back; `possibly` keeps them, held for a reconciliation's move.
  return status === 'failed' || notCharged ? 'release' : 'unknown';
}

/** The record as the outcome settles it; field by field rather than spread: this runs once per inquiry (docs/performance.md). */
export function settledRecord(record: InquiryRecord, outcome: InquiryOutcome): InquiryRecord {
  return {
    trackId: record.trackId,
    clientId: record.clientId,
    subjectSha256: record.subjectSha256,
    operation: record.operation,
    requestHandlingType: record.requestHandlingType,
    fingerprint: record.fingerprint,
    status: outcome.status,
    createdAt: record.createdAt,
    completedAt: new Date().toISOString(),
    upstream: outcome.record.upstream,
    data: outcome.record.data,
    // Only the final successful attempt is charged; a failed one releases what was reserved
    // (docs/upstream-api.md §4.4 rule 9): `failed` is `no`, as budgets count it; only an
    // `unknown` may have been charged (docs/api.md §7).
    charged:
      outcome.status === 'succeeded' ? 'yes' : outcome.status === 'unknown' && !outcome.notCharged ? 'possibly' : 'no',
    requestId: record.requestId,
    costUnits: record.costUnits,
    reservation: record.reservation,
    // The price stamped at opening (also for a settlement long after, owed or async).
    unitPrice: record.unitPrice,
    currency: record.currency,
  };
}
