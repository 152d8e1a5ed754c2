import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { AppConfig } from '../config/app-config.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { ProblemException } from '../problem/problem.js';
import type { StoredAnswer } from '../reuse/answer-store.js';
import { ageSeconds, cacheStatus, reusedBody, type CacheOutcome } from '../reuse/reused-answer.js';
import { AGE_HEADER, CACHE_STATUS_HEADER } from '../vocabulary/headers.js';
import { IdempotencyService } from './idempotency.service.js';
import { InquiryBooks } from './inquiry-books.js';
import { recordIdentity, type InquiryInFlight, type InquiryResponse } from './inquiry-in-flight.js';
import { JSON_CONTENT_TYPE } from './inquiry-outcome.js';
import { recordExpiry, type InquiryRecord, type StoredResponse } from './inquiry-record.js';
import { Settlements } from './settlements.js';

/** The answer reused: a stored one, or the record of the inquiry in flight that was joined. */
export type ReusedSource = Pick<StoredAnswer, 'trackId' | 'clientId' | 'data' | 'upstream'>;

/**
 * A reused answer as an inquiry of its own (docs/api.md §2 and §6): its fresh trackId, its
 * record settled `succeeded` with `reusedFrom`, `charged: no`, `costUnits: 0` and `unitsSaved`
 * (what it would have cost at its own type and price now, recorded as a fact, with the unit
 * price in force now), hence its own
 * ledger entry; no budget reservation. The record and the key's answer are written before the
 * answer is sent, as a settlement's are (owed to Settlements when the store fails).
 */
@Injectable()
export class ReusedAnswers {
  private readonly ttlSeconds: number;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly books: InquiryBooks,
    private readonly settlements: Settlements,
    private readonly idempotency: IdempotencyService,
    private readonly prices: InquiryPrices,
    private readonly subjects: SubjectHasher,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
  }

  /**
   * Writes the `pending` record of an inquiry that joins one in flight, before it waits: its
   * trackId (named by a 409, or a keyed async retry's 202 `Location`) reads `pending`, not 404,
   * while it waits (test/join-edges.e2e.spec.ts). Its claim is kept all along. Rejects when the
   * store cannot write it (nothing sent: the claim is undone).
   */
  async join(inquiry: InquiryInFlight, deadlineMs: number): Promise<InquiryRecord> {
    const { request } = inquiry;
    const record: InquiryRecord = {
      ...recordIdentity(inquiry, this.subjects),
      status: 'pending',
      createdAt: new Date().toISOString(),
      deadlineAt: new Date(deadlineMs).toISOString(),
      joined: true,
      requestId: inquiry.facts?.requestId,
      costUnits: this.prices.unitsOf(request.operation, request.requestHandlingType),
      ...this.prices.recordedPrice,
    };
    try {
      await this.books.openJoined(record, this.ttlSeconds);
    } catch (error) {
      // A write that timed out may land later: its delete is owed, as an opening's (503 names the trackId).
      const discard = () => this.books.discardJoined(record.trackId);
      void this.settlements.write(`discard of ${record.trackId}`, discard, recordExpiry(record, this.ttlSeconds));
      if (error instanceof ProblemException) error.trackId = record.trackId;
      throw error;
    }
    return record;
  }

  /**
   * The answer, and the units it saved. `joined`: the waiter's record (`join`), settled now (its
   * createdAt kept) and `announce`d to its long-polls once written, owed or not (as
   * InquirySettlement does: test/join-edges.e2e.spec.ts, 'owed to a failing store').
   */
  async answer(
    inquiry: InquiryInFlight,
    source: ReusedSource,
    ageMs: number,
    outcome: CacheOutcome,
    joined?: { record: InquiryRecord; announce: () => Promise<void> },
  ): Promise<{ response: InquiryResponse; unitsSaved: number }> {
    const { caller, request, trackId, key } = inquiry;
    const now = new Date().toISOString();
    const unitsSaved = this.prices.unitsOf(request.operation, request.requestHandlingType);
    // Another client's answer (only under `company`): its trackId stays in the ledger, not in this caller's view.
    const hidden = source.clientId !== caller.clientId;
    const record: InquiryRecord = {
      ...recordIdentity(inquiry, this.subjects),
      status: 'succeeded',
      createdAt: joined?.record.createdAt ?? now,
      completedAt: now,
      upstream: source.upstream,
      data: source.data,
      charged: 'no',
      requestId: inquiry.facts?.requestId,
      costUnits: 0,
      reusedFrom: source.trackId,
      ...(hidden ? { reusedFromHidden: true } : {}),
      unitsSaved,
      // The money its reuse saved is unitsSaved × the unit price in force now, recorded with it.
      ...this.prices.recordedPrice,
    };
    const response: StoredResponse = {
      status: 200,
      contentType: JSON_CONTENT_TYPE,
      trackId,
      body: reusedBody(trackId, source.data, hidden ? undefined : source.trackId),
      headers: { [AGE_HEADER]: ageSeconds(ageMs), [CACHE_STATUS_HEADER]: cacheStatus(outcome) },
    };
    const until = recordExpiry(record, this.ttlSeconds);
    await Promise.all([
      // Written as a settlement is (no `pending` first: nothing is sent, so no charge to trace).
      this.settlements.write(
        `record of ${trackId}`,
        async () => {
          await this.books.settle(record, this.ttlSeconds);
          await joined?.announce();
        },
        until,
      ),
      key &&
        this.settlements.write(
          `idempotency result of ${trackId}`,
          () => this.idempotency.complete(key, response),
          until,
        ),
    ]);
    return { response: { ...response, replayed: false }, unitsSaved };
  }
}
