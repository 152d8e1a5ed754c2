import { Injectable } from '@nestjs/common';
import { ProblemException } from '../problem/problem.js';
import { AsyncAnswers } from './async-answers.js';
import { IdempotencyService, msUntilSettledAnswerDue, type ClaimResult } from './idempotency.service.js';
import type { InquiryInFlight, InquiryResponse } from './inquiry-in-flight.js';
import { InquiryStore } from './inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';

/** The shortest pause between two claims of a keyed async retry. */
const MIN_CLAIM_RETRY_MS = 50;
/** How often a keyed async retry looks again for a settled failure's answer to be stored. */
const UNSTORED_FAILURE_POLL_MS = 500;

/**
 * The second step: claims the inquiry's Idempotency-Key (IdempotencyService holds the rules).
 * With `respond-async`, a request still in flight under the key is waited for like a long-poll
 * (up to the caller's wait), then answered with the replay once it has settled, or the same
 * 202 as the first got (docs/api.md, "Asynchronous answers").
 */
@Injectable()
export class KeyClaim {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly records: InquiryStore,
    private readonly waits: InquiryWaits,
    private readonly answers: AsyncAnswers,
  ) {}

  /**
   * Undefined when the key is now this request's (`inquiry.key`); otherwise the answer the
   * earlier request under it gives: its replay, or its 202. A refusal (503) names this
   * inquiry's trackId (docs/api.md §3), a 409 names the request in flight, a 422 none: no
   * record was written under this one, and a trackId in an answer is one that can be read.
   */
  async claim(inquiry: InquiryInFlight, idempotencyKey: string): Promise<InquiryResponse | undefined> {
    let claimed: ClaimResult | { accepted: InquiryResponse };
    try {
      claimed = await this.claimOrWait(inquiry, idempotencyKey);
    } catch (error) {
      if (error instanceof ProblemException && error.trackId === undefined && error.code !== 'idempotency_key_reused')
        error.trackId = inquiry.trackId;
      throw error;
    }
    if ('replay' in claimed) return { ...claimed.replay, replayed: true };
    if ('accepted' in claimed) return claimed.accepted;
    inquiry.key = claimed.held;
    return undefined;
  }

  /**
   * The claim's undo, when a later step refused the inquiry before anything was sent: the key
   * is released, so a retry runs afresh; then `error` is thrown. A budget's refusal is answered
   * only once the key is free, so a retry at once, on any replica, is refused again rather than
   * told 409 (src/inquiry/key-claim.spec.ts, 'undo: after a budget refusal, answers only once
   * the key is released'); behind a failing store the release is not waited for.
   */
  async undo({ key }: InquiryInFlight, error: unknown): Promise<never> {
    if (key) {
      const released = this.idempotency.release(key).catch(() => undefined);
      if (error instanceof ProblemException && error.code === 'budget_exhausted') await released;
    }
    throw error;
  }

  /**
   * Every round ends or waits: for the first request's settlement notice, or (settled, its
   * answer not stored yet) for that answer to be stored or made from the record
   * (test/keyed-async-retry.e2e.spec.ts, 'keyed async retry while the claim is in flight').
   */
  private async claimOrWait(
    { caller, request, trackId, fingerprint, prefer }: InquiryInFlight,
    idempotencyKey: string,
  ): Promise<ClaimResult | { accepted: InquiryResponse }> {
    const until = Date.now() + (prefer?.waitMs ?? 0);
    for (;;) {
      try {
        return await this.idempotency.claim(caller, idempotencyKey, trackId, fingerprint);
      } catch (error) {
        const inFlight = error instanceof ProblemException && error.code === 'idempotency_key_in_use';
        if (!prefer || !inFlight || !error.trackId) throw error;
        const first = error.trackId;
        const left = until - Date.now();
        if (left <= 0) return { accepted: this.answers.accepted(first, request.requestHandlingType) };
        const wait = await this.waits.hold(first);
        if (!wait) throw this.waits.refusal();
        let woken: boolean;
        try {
          // As for a long-poll: held first, then read, so a settlement just before the hold is
          // seen now rather than after the whole wait.
          const record = await this.records.get(first);
          if (record && record.status !== 'pending') {
            // Settled, its notice sent already: a timer, not the held wait, until the answer is
            // stored (or released), or a success is due to be rebuilt from the record
            // (IdempotencyService.answerRepeat); a failure's answer is only ever stored: polled.
            wait.release();
            const due = record.status === 'succeeded' ? msUntilSettledAnswerDue(record) : UNSTORED_FAILURE_POLL_MS;
            await delay(Math.max(MIN_CLAIM_RETRY_MS, Math.min(left, due)));
            continue;
          }
          woken = await wait.until(left, prefer.gone);
        } finally {
          wait.release();
        }
        // The wait ended (or the caller hung up, or the replica is shutting down): the same 202
        // as the first request got.
        if (!woken || prefer.gone?.aborted)
          return { accepted: this.answers.accepted(first, request.requestHandlingType) };
      }
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
