import { Injectable } from '@nestjs/common';
import { AnswerStore } from '../reuse/answer-store.js';
import { ReuseCounters } from '../reuse/reuse-counters.js';
import { ageSeconds, cacheStatus, reusedBody, servableStale } from '../reuse/reused-answer.js';
import { AGE_HEADER, CACHE_STATUS_HEADER } from '../vocabulary/headers.js';
import type { OpenInquiry } from './inquiry-in-flight.js';
import { JSON_CONTENT_TYPE, type InquiryOutcome } from './inquiry-outcome.js';
import type { StoredResponse } from './inquiry-record.js';

/** What reuse adds to a settlement (InquirySettlement.settle). */
export interface ReuseSettlement {
  /** Replaces the outcome's answer: a stale answer served under stale-if-error. */
  response?: Omit<StoredResponse, 'trackId'>;
  /** Added to the outcome's answer (`Cache-Status`). */
  headers?: Record<string, string>;
  /** The stale answer's trackId, for the record and its ledger entry; `hidden` from another client. */
  reusedFrom?: { trackId: string; hidden: boolean };
  /** The answer stored, or the registration in flight released: sent beside the settlement's writes. Never rejects. */
  write?: () => Promise<void>;
}

/**
 * After the call of an inquiry whose caller engaged reuse (docs/api.md §2, "Reusing answers"):
 * a `succeeded` answer is kept (unless `no-store`), which also ends its registration in flight;
 * any other outcome releases it. Where the answer would be 502, 503 `upstream_unavailable` or
 * 504 and an answer within stale-if-error was found, that one is served instead.
 */
@Injectable()
export class AnswerKeeping {
  constructor(
    private readonly store: AnswerStore,
    private readonly counters: ReuseCounters,
  ) {}

  after(open: OpenInquiry, outcome: InquiryOutcome): ReuseSettlement | undefined {
    const reuse = open.reuse;
    if (!reuse) return undefined;
    // The call is over: its registration needs no more renewal (the store or release ends it).
    reuse.stopLease?.();
    const { question, directives } = reuse;
    const { trackId, request, caller } = open;
    const handling = request.requestHandlingType;
    const release = reuse.leading
      ? () => this.store.release(question.key, handling, trackId).then(noop, noop)
      : undefined;
    if (outcome.status === 'succeeded') {
      this.counters.count(request.operation, 'miss');
      const keep = directives.keep;
      const answer = {
        trackId,
        clientId: caller.clientId,
        data: outcome.record.data,
        upstream: outcome.record.upstream,
      };
      return {
        headers: {
          [CACHE_STATUS_HEADER]: cacheStatus({
            kind: 'fresh',
            forwardedByRequest: reuse.forwardedByRequest,
            stored: keep,
          }),
        },
        // The store ends the registration in flight in the same script (RedisAnswerStore.store).
        write: keep
          ? () => this.store.store(question.key, handling, answer, question.policy.maxAgeSeconds).then(noop, noop)
          : release,
      };
    }
    const stale = servesStale(outcome) ? servableStale(reuse.stale, Date.now()) : undefined;
    if (!stale) {
      this.counters.count(request.operation, 'miss');
      return {
        headers: {
          [CACHE_STATUS_HEADER]: cacheStatus({
            kind: 'fresh',
            forwardedByRequest: reuse.forwardedByRequest,
            stored: false,
          }),
        },
        write: release,
      };
    }
    this.counters.count(request.operation, 'stale');
    const { answer, ageMs } = stale;
    const hidden = answer.clientId !== caller.clientId;
    const status = outcome.sent
      ? cacheStatus({ kind: 'stale', fwdStatus: outcome.sent.httpStatus })
      : cacheStatus({
          kind: 'stale-unforwarded',
          secondsPastMaxAge: Math.max(0, Math.floor((ageMs - reuse.stale!.maxAgeMs) / 1000)),
        });
    return {
      response: {
        status: 200,
        contentType: JSON_CONTENT_TYPE,
        body: reusedBody(trackId, answer.data, hidden ? undefined : answer.trackId),
        headers: { [AGE_HEADER]: ageSeconds(ageMs), [CACHE_STATUS_HEADER]: status },
      },
      reusedFrom: { trackId: answer.trackId, hidden },
      write: release,
    };
  }
}

/** stale-if-error applies where the answer would be 502, 503 `upstream_unavailable` or 504 (never 4xx, never `store_unavailable`). */
function servesStale(outcome: InquiryOutcome): boolean {
  const { status, body } = outcome.response;
  if (status === 502 || status === 504) return true;
  return status === 503 && (body as { code?: string }).code === 'upstream_unavailable';
}

function noop(): void {}
