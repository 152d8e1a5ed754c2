import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { ProblemException } from '../problem/problem.js';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import { reservationRecord, type ReserveRequest, type ReserveResult } from '../budget/budget.store.js';
import { Budgets } from '../budget/budgets.js';
import { InquiryBooks } from './inquiry-books.js';
import { DEADLINE_MARGIN_MS, inquiryBudget } from './inquiry-deadline.js';
import { recordIdentity, type InquiryInFlight, type OpenInquiry } from './inquiry-in-flight.js';
import { recordExpiry, type InquiryRecord } from './inquiry-record.js';
import { Settlements } from './settlements.js';

type Refused = Extract<ReserveResult, { admitted: false }>;

/**
 * The step before the call: reserve the budget and record the inquiry `pending`, with the
 * ledger's duty (InquiryBooks), before anything is sent: no charge may go untraced. After the
 * claim, so a replay is answered even when the budget is spent (docs/api.md §6).
 */
@Injectable()
export class InquiryOpening {
  private readonly ttlSeconds: number;
  private readonly upstreamSettings: AppConfig['upstream'];

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly budgets: Budgets,
    private readonly prices: InquiryPrices,
    private readonly books: InquiryBooks,
    private readonly settlements: Settlements,
    /** End users' pseudonyms, keyed (crypto/subject-hash.ts). */
    private readonly subjects: SubjectHasher,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
    this.upstreamSettings = config.get('upstream', { infer: true });
  }

  /**
   * The inquiry with its record written. Refused by a budget: 429 `budget_exhausted` without
   * a trackId; a store failure: 503 with it. Either way nothing was sent, and what may have
   * been written is discarded (`undo`); the key is the claim's to release (KeyClaim.undo).
   */
  async open(inquiry: InquiryInFlight): Promise<OpenInquiry> {
    const { caller, request, trackId } = inquiry;
    const createdAt = Date.now();
    const callBudget = inquiryBudget(this.upstreamSettings, request.requestHandlingType, createdAt);
    // A deadline stamped on arrival (ReuseStep) stands: a waiter is never answered past it.
    if (inquiry.deadline !== undefined) callBudget.deadline = Math.min(callBudget.deadline, inquiry.deadline);
    // No budget configured for the caller: no reservation.
    const reservation = this.budgets.reservationFor(
      caller.clientId,
      request.operation,
      request.requestHandlingType,
      trackId,
      callBudget.deadline + DEADLINE_MARGIN_MS,
    );
    const record: InquiryRecord = {
      ...recordIdentity(inquiry, this.subjects),
      status: 'pending',
      createdAt: new Date(createdAt).toISOString(),
      deadlineAt: new Date(callBudget.deadline).toISOString(),
      requestId: inquiry.facts?.requestId,
      costUnits: reservation?.units ?? this.prices.unitsOf(request.operation, request.requestHandlingType),
      ...(reservation ? { reservation: reservationRecord(reservation) } : {}),
      // The unit price in force now, with the units: money is read from it, never from a later price.
      ...this.prices.recordedPrice,
    };
    let refused: Refused | undefined;
    let failure: Error | undefined;
    try {
      const replacesJoined = inquiry.reuse?.replacesJoined === true;
      const admitted = await this.books.open(record, this.ttlSeconds, reservation, replacesJoined);
      if (admitted?.admitted === false) refused = admitted;
    } catch (error) {
      failure = asError(error);
    }
    if (refused === undefined && failure === undefined) {
      const open = inquiry as OpenInquiry;
      open.record = record;
      open.callBudget = callBudget;
      return open;
    }
    return this.undo(inquiry, record, reservation, refused, failure);
  }

  /**
   * Discards what a refused or failed opening may have written, owed until done
   * (test/slow-redis.e2e.spec.ts, 'leaves no record for the refused trackId'), and throws its
   * problem.
   */
  private undo(
    { trackId, caller, request }: InquiryInFlight,
    record: InquiryRecord,
    reservation: ReserveRequest | undefined,
    refused: Refused | undefined,
    failure: Error | undefined,
  ): never {
    const discard = this.books.undo(trackId, failure !== undefined, reservation !== undefined);
    if (discard) void this.settlements.write(`discard of ${trackId}`, discard, recordExpiry(record, this.ttlSeconds));
    if (failure === undefined)
      throw this.budgets.refusal(reservation!, refused!, {
        clientId: caller.clientId,
        operation: request.operation,
      });
    // The trackId was stamped: the problem names it (docs/api.md §3).
    if (failure instanceof ProblemException) failure.trackId = trackId;
    throw failure;
  }
}

/** A store's rejection as an Error (ioredis and the stores only ever reject with one). */
function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('The store rejected the write.');
}
