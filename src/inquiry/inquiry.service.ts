import { Injectable } from '@nestjs/common';
import type { Caller } from '../caller-auth/caller.js';
import type { RequestFacts } from '../observability/request-context.js';
import type { ReuseDirectives } from '../reuse/cache-control.js';
import { AsyncAnswers } from './async-answers.js';
import {
  stamp,
  type AsyncPreference,
  type InquiryInFlight,
  type InquiryRequest,
  type InquiryResponse,
  type OpenInquiry,
} from './inquiry-in-flight.js';
import { InquiryCall } from './inquiry-call.js';
import { InquiryOpening } from './inquiry-opening.js';
import { KeyClaim } from './key-claim.js';
import { ReuseStep } from './reuse-step.js';
import { RunningInquiries } from './running-inquiries.js';

/**
 * The gateway's main job (docs/api.md §2), as a row of steps (docs/architecture.md, "One
 * inquiry's path"): stamp a trackId, claim the Idempotency-Key (a retry replays the first
 * answer instead of charging again), reuse an answer already held or join an identical inquiry
 * in flight (docs/api.md §2, "Reusing answers"), reserve the budget and record the inquiry
 * before the upstream sees it, call the upstream, settle the record, answer
 * (docs/upstream-api.md §4.4 rules 1, 5 and 9). Reads of a record are InquiryReads'.
 */
@Injectable()
export class InquiryService {
  constructor(
    private readonly running: RunningInquiries,
    private readonly keys: KeyClaim,
    private readonly reuse: ReuseStep,
    private readonly opening: InquiryOpening,
    private readonly call: InquiryCall,
    private readonly answers: AsyncAnswers,
  ) {}

  /**
   * Stamps the inquiry and runs its steps. `prefer`: the caller asked for an asynchronous answer
   * (202 unless settled in the wait). `directives`: its `Cache-Control`, when sent. Once shutdown has begun a new inquiry is refused (503
   * `upstream_unavailable`, `Retry-After`): nothing is written or sent, so the caller's retry on
   * another replica is safe. One taken before is running (checked and added in the same tick),
   * so the drain waits for it (test/resilience.e2e.spec.ts, 'shutdown lets in-flight inquiries
   * finish and record their outcome').
   */
  execute(
    caller: Caller,
    request: InquiryRequest,
    idempotencyKey?: string,
    facts?: RequestFacts,
    prefer?: AsyncPreference,
    directives?: ReuseDirectives,
  ): Promise<InquiryResponse> {
    if (!this.running.accepting) return Promise.reject(this.running.refusal());
    return this.running.track(this.inquire(stamp(caller, request, idempotencyKey, facts, prefer, directives)));
  }

  private async inquire(inquiry: InquiryInFlight): Promise<InquiryResponse> {
    // Claim the key: a repeat is answered from the earlier request and goes no further.
    if (inquiry.idempotencyKey !== undefined) {
      const earlier = await this.keys.claim(inquiry, inquiry.idempotencyKey);
      if (earlier) return earlier;
    }

    // Reuse an answer held, or join an identical inquiry in flight; a reused answer ends here.
    // Without `Cache-Control` the reuse step is not called (no promise, no await).
    let open: OpenInquiry;
    try {
      const reused = inquiry.directives && (await this.reuse.answer(inquiry));
      if (reused) return reused;
      // Reserve the budget and record the inquiry; refused or failed, the claim (and the
      // registration in flight) is undone.
      open = await this.opening.open(inquiry);
    } catch (error) {
      await this.reuse.abandon(inquiry);
      return this.keys.undo(inquiry, error);
    }

    // Call and settle; an asynchronous caller may be answered first, its settlement owed.
    const settled = this.call.callAndSettle(open);
    return inquiry.prefer ? this.answers.answer(open, settled, inquiry.prefer.waitMs) : settled;
  }
}
