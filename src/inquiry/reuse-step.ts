import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { ProblemException } from '../problem/problem.js';
import { AnswerStore, type ReuseAllowance, type ReuseLookup } from '../reuse/answer-store.js';
import { reuseAllowance } from '../reuse/reuse-allowance.js';
import { ReuseCounters } from '../reuse/reuse-counters.js';
import { ReuseQuestions } from '../reuse/reuse-key.js';
import type { StaleAnswer } from '../reuse/reused-answer.js';
import { inquiryBudget } from './inquiry-deadline.js';
import type { InquiryInFlight, InquiryResponse } from './inquiry-in-flight.js';
import type { InquiryRecord } from './inquiry-record.js';
import { LeaderWait } from './leader-wait.js';
import { ReusedAnswers, type ReusedSource } from './reused-answers.js';

/** A waiter whose leader did not succeed goes on alone after a random delay up to this: no stampede. */
export const JOIN_FALLBACK_JITTER_MS = 250;

/**
 * The reuse step (docs/api.md §2, "Reusing answers"; decision 0014), after the Idempotency-Key
 * claim and before the budget: a stored answer within the caller's `max-age` and the operator's
 * `maxAgeSeconds` answers at once (`hit`); else an identical inquiry in flight is joined and its
 * answer reused if it succeeds (`collapsed`); else the inquiry goes on, registered as the one in
 * flight (`inquiry.reuse`, for AnswerKeeping after the call). Without `Cache-Control`, or for an
 * operation the operator does not share, it returns at once: no Redis command.
 */
@Injectable()
export class ReuseStep {
  private readonly upstreamSettings: AppConfig['upstream'];

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly questions: ReuseQuestions,
    private readonly store: AnswerStore,
    private readonly counters: ReuseCounters,
    private readonly leaders: LeaderWait,
    private readonly reused: ReusedAnswers,
  ) {
    this.upstreamSettings = config.get('upstream', { infer: true });
  }

  /**
   * The reused answer, or undefined: the inquiry goes on (with `inquiry.reuse` set when reuse is
   * engaged). `only-if-cached` with nothing reusable: 504 `not_cached`, nothing written (the
   * claim is the caller's to undo).
   */
  async answer(inquiry: InquiryInFlight): Promise<InquiryResponse | undefined> {
    const { directives, request } = inquiry;
    if (!directives) return undefined;
    const question = this.questions.of(inquiry.caller, request.operation, request.fields);
    const allowance = question && reuseAllowance(directives, question.policy);
    if (!question || !allowance) {
      if (directives.onlyIfCached) throw this.notCached(inquiry);
      // `no-cache` with max-age: nothing reused or joined, but the fresh answer is kept.
      if (question && directives.keep) {
        inquiry.reuse = { question, directives, leading: false, forwardedByRequest: true };
      }
      return undefined;
    }
    const arrivedAt = Date.now();
    const ownBudget = inquiryBudget(this.upstreamSettings, request.requestHandlingType, arrivedAt);
    const ownDeadline = ownBudget.deadline;
    inquiry.deadline = ownDeadline;
    // An asynchronous caller never joins (docs/api.md §2): it leads, or is answered from a stored answer.
    const asked: ReuseAllowance = inquiry.prefer ? { ...allowance, join: false } : allowance;
    let found: ReuseLookup;
    try {
      found = await this.store.lookupOrJoin(question.key, request.requestHandlingType, asked, {
        trackId: inquiry.trackId,
        deadlineMs: ownDeadline,
      });
    } catch {
      // The answer store failing costs reuse, never the inquiry: it goes on fresh (the opening's
      // own write says whether the store can record it at all).
      if (directives.onlyIfCached) throw this.notCached(inquiry);
      inquiry.reuse = { question, directives, leading: false, forwardedByRequest: false };
      return undefined;
    }
    if (found.result === 'hit') return this.reuse(inquiry, found.answer, found.ageMs, 'hit');
    if (!allowance.lead) throw this.notCached(inquiry);
    const stale: StaleAnswer | undefined = found.stale && {
      ...found.stale,
      measuredAt: arrivedAt,
      maxAgeMs: allowance.maxAgeMs,
      limitMs: allowance.maxAgeMs + allowance.staleMs,
    };
    if (found.result === 'join') {
      // It waits no longer than leaves, before its own deadline, its own call and the call's one
      // repeat (after a 401) and the delay below: a dead leader never costs it its answer
      // (test/reuse-path.e2e.spec.ts, 'a waiter on a leader registered past its own limit is answered within its own deadline').
      const waitUntil = ownDeadline - 2 * ownBudget.callTimeoutMs - JOIN_FALLBACK_JITTER_MS;
      // A dead leader's lease lapses within LEADER_LEASE_MS and the waiter goes on then
      // (test/reuse-path.e2e.spec.ts, 'a dead leader's lease lapses and its waiter goes on at once, long before its deadline').
      const { trackId: leaderId } = found.leader;
      const leaseLeft = () => this.store.leaseLeft(question.key, request.requestHandlingType, leaderId);
      // Recorded `pending` before it waits, its claim kept: a keyed retry's Location reads it.
      const joined = await this.reused.join(inquiry, ownDeadline);
      const leader = await this.leaders.settled(found.leader, waitUntil, leaseLeft);
      if (leader?.status === 'succeeded') {
        // Joined while the leader was in flight (its answer and its registration end in one
        // script), so it arrived before the leader completed: `collapsed`, Age 0.
        const { trackId, clientId, data, upstream } = leader;
        // Its long-polls (a keyed retry's included), on any replica, wake to the settled record.
        const announce = () => this.leaders.announce(inquiry.trackId);
        return this.reuse(inquiry, { trackId, clientId, data, upstream }, 0, 'join', { record: joined, announce });
      }
      // Its failure is never handed on: the waiter sends its own, never joining again, after a
      // random delay so that the waiters of one failed leader do not all call at once
      // (test/reuse-path.e2e.spec.ts, 'a failed leader's waiters each send their own, spread').
      await delay(randomInt(JOIN_FALLBACK_JITTER_MS + 1));
      // Its own record is the opening's to write, with its duty and reservation, over this one.
      inquiry.reuse = { question, directives, leading: false, forwardedByRequest: false, stale, replacesJoined: true };
      return undefined;
    }
    inquiry.reuse = { question, directives, leading: found.leading, forwardedByRequest: found.storedTooOld, stale };
    // Its registration renewed while its call runs; stopped by AnswerKeeping or `abandon`.
    if (found.leading) {
      inquiry.reuse.stopLease = this.store.keepAlive(
        question.key,
        request.requestHandlingType,
        inquiry.trackId,
        ownDeadline,
      );
    }
    return undefined;
  }

  /**
   * Ends the registration in flight of an inquiry refused before it was recorded (budget, store),
   * and wakes its waiters so that they go on alone at once rather than at its deadline.
   */
  async abandon(inquiry: InquiryInFlight): Promise<void> {
    const reuse = inquiry.reuse;
    reuse?.stopLease?.();
    if (!reuse?.leading) return;
    reuse.leading = false;
    try {
      await this.store.release(reuse.question.key, inquiry.request.requestHandlingType, inquiry.trackId);
    } catch {
      // Its lease ends at its deadline anyway.
    }
    await this.leaders.announce(inquiry.trackId);
  }

  private async reuse(
    inquiry: InquiryInFlight,
    source: ReusedSource,
    ageMs: number,
    result: 'hit' | 'join',
    joined?: { record: InquiryRecord; announce: () => Promise<void> },
  ): Promise<InquiryResponse> {
    const { operation } = inquiry.request;
    const { response, unitsSaved } = await this.reused.answer(
      inquiry,
      source,
      ageMs,
      { kind: result === 'hit' ? 'hit' : 'collapsed' },
      joined,
    );
    this.counters.count(operation, result);
    this.counters.saved(operation, unitsSaved);
    return response;
  }

  private notCached(inquiry: InquiryInFlight): ProblemException {
    this.counters.count(inquiry.request.operation, 'not_cached');
    return new ProblemException(
      'not_cached',
      'No answer within the allowed age is held for this question, and only-if-cached forbids asking the verification service.',
    );
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
