import { randomUUID } from 'node:crypto';
import type { Caller } from '../caller-auth/caller.js';
import type { SubjectHasher } from '../crypto/subject-hash.js';
import { sha256 } from '../crypto/sha256.js';
import type { RequestFacts } from '../observability/request-context.js';
import type { ReuseDirectives } from '../reuse/cache-control.js';
import type { ReuseInFlight } from '../reuse/reused-answer.js';
import type { CallBudget } from '../token/authorized-upstream.js';
import type { HeldKey } from './idempotency.service.js';
import type { InquiryOperation, InquiryRecord, RequestHandlingType, StoredResponse } from './inquiry-record.js';

/** A validated, normalised inquiry as it will be sent upstream (without the trackId). */
export interface InquiryRequest {
  operation: InquiryOperation;
  /** The route, part of the idempotency fingerprint (same key on another path = reuse). */
  route: string;
  requestHandlingType: RequestHandlingType;
  fields: Record<string, string>;
}

/** What the controller sends back; `replayed` adds `Idempotent-Replayed: true`. */
export interface InquiryResponse extends StoredResponse {
  replayed: boolean;
}

/**
 * `Prefer: respond-async, wait=<s>` (docs/api.md, "Asynchronous answers"): answer 202 if the
 * inquiry has not settled within `waitMs`.
 */
export interface AsyncPreference {
  waitMs: number;
  /**
   * Aborted when the caller hangs up: a keyed retry's held wait frees its slot then
   * (test/keyed-async-retry.e2e.spec.ts, 'a keyed respond-async retry held on the first request
   * frees its slot at once too').
   */
  gone?: AbortSignal;
}

/**
 * One inquiry on its way through the steps of InquiryService: what the caller sent and the
 * stamp, then what each step adds for the next.
 */
export interface InquiryInFlight {
  readonly caller: Caller;
  readonly request: InquiryRequest;
  readonly idempotencyKey: string | undefined;
  /** The HTTP request's facts (request-context.ts), for the lines this inquiry writes and its trace. */
  readonly facts: RequestFacts | undefined;
  readonly prefer: AsyncPreference | undefined;
  /** The request's `Cache-Control`, when it sent one (reuse/cache-control.ts). */
  readonly directives: ReuseDirectives | undefined;
  readonly trackId: string;
  readonly fingerprint: string;
  /** The Idempotency-Key, once this request holds it (KeyClaim). */
  key: HeldKey | undefined;
  /** What the reuse step found, when reuse is engaged and the inquiry goes upstream (ReuseStep). */
  reuse: ReuseInFlight | undefined;
  /** The record as written before the call (InquiryOpening). */
  record: InquiryRecord | undefined;
  /**
   * The deadline stamped on arrival at the reuse step (epoch ms), when reuse is engaged: the
   * opening keeps it rather than a fresh one, so a waiter's wait comes out of its own budget.
   */
  deadline: number | undefined;
  /** The upstream call's timeout and deadline, from the moment the record was written (or `deadline`). */
  callBudget: CallBudget | undefined;
}

/**
 * Who asked what, as every record of this inquiry holds it: the opened one (InquiryOpening)
 * and a reused answer's (ReusedAnswers). `subjectSha256` is undefined when no end user: left
 * out of the stored JSON.
 */
export function recordIdentity(
  inquiry: InquiryInFlight,
  subjects: SubjectHasher,
): Pick<InquiryRecord, 'trackId' | 'clientId' | 'subjectSha256' | 'operation' | 'requestHandlingType' | 'fingerprint'> {
  const { caller, request } = inquiry;
  return {
    trackId: inquiry.trackId,
    clientId: caller.clientId,
    subjectSha256: caller.subject ? subjects.hash(caller.subject) : undefined,
    operation: request.operation,
    requestHandlingType: request.requestHandlingType,
    fingerprint: inquiry.fingerprint,
  };
}

/** An inquiry whose record is written (InquiryOpening): what the call and the settlement read. */
export interface OpenInquiry extends InquiryInFlight {
  record: InquiryRecord;
  callBudget: CallBudget;
}

/**
 * The first step: a fresh trackId (the provider uses one once only and bills by it,
 * docs/upstream-api.md §4.4 rules 1 and 5) and the request's fingerprint.
 */
export function stamp(
  caller: Caller,
  request: InquiryRequest,
  idempotencyKey: string | undefined,
  facts: RequestFacts | undefined,
  prefer: AsyncPreference | undefined,
  directives?: ReuseDirectives,
): InquiryInFlight {
  return {
    caller,
    request,
    idempotencyKey,
    facts,
    prefer,
    directives,
    trackId: randomUUID(),
    fingerprint: fingerprintOf(request),
    key: undefined,
    reuse: undefined,
    record: undefined,
    deadline: undefined,
    callBudget: undefined,
  };
}

/** SHA-256 over the route, the handling type and the normalised fields, in a fixed key order. */
export function fingerprintOf(request: InquiryRequest): string {
  const fields = Object.keys(request.fields)
    .sort()
    .map((key) => [key, request.fields[key]]);
  return sha256(JSON.stringify([request.route, request.requestHandlingType, fields]));
}
