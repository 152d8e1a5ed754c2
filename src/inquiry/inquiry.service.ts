import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { sha256 } from '../crypto/sha256.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { requestLogFields, type InquiryLogFields, type RequestFacts } from '../observability/request-context.js';
import { ProblemException } from '../problem/problem.js';
import { AuthorizedUpstream } from '../token/authorized-upstream.js';
import { IdempotencyService, type HeldKey } from './idempotency.service.js';
import { failureLogLine, failureOutcome, successOutcome, type InquiryOutcome } from './inquiry-outcome.js';
import { publicView, type InquiryRecord, type StoredResponse } from './inquiry-record.js';
import { InquiryStore } from './inquiry.store.js';
import { Settlements } from './settlements.js';
import { guardStore } from './store-guard.js';
import type { InquiryOperation, RequestHandlingType } from './inquiry-record.js';
import { INQUIRY_OPERATIONS } from '../upstream/inquiry-operation.js';

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
 * The gateway's main job (docs/api.md §2), in five steps: stamp a trackId, claim the
 * Idempotency-Key (a retry replays the first answer instead of charging again), record the
 * inquiry before the upstream sees it, call the upstream, settle the record and answer
 * (docs/upstream-api.md §4.4 rules 1, 5 and 9).
 */
@Injectable()
export class InquiryService {
  private readonly logger = new Logger(InquiryService.name);
  private readonly ttlSeconds: number;
  /** Seconds until the open circuit lets a trial call through, for `Retry-After`. */
  private readonly circuitRetryAfter: string;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly records: InquiryStore,
    private readonly idempotency: IdempotencyService,
    private readonly upstream: AuthorizedUpstream,
    private readonly metrics: GatewayMetrics,
    private readonly settlements: Settlements,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
    this.circuitRetryAfter = String(Math.ceil(config.get('upstream', { infer: true }).circuitResetMs / 1000));
    zeroInquirySeries(metrics);
  }

  /** `facts`: the HTTP request's (request-context.ts), for the lines this inquiry writes and its trace. */
  async execute(
    caller: Caller,
    request: InquiryRequest,
    idempotencyKey?: string,
    facts?: RequestFacts,
  ): Promise<InquiryResponse> {
    // 1. Stamp.
    const trackId = randomUUID();
    const fingerprint = fingerprintOf(request);

    // 2. Claim the key: a repeat is answered from the earlier request and goes no further.
    let key: HeldKey | undefined;
    if (idempotencyKey !== undefined) {
      const claimed = await this.idempotency.claim(caller, idempotencyKey, trackId, fingerprint);
      if ('replay' in claimed) return { ...claimed.replay, replayed: true };
      key = claimed.held;
    }

    // 3. Record, before the upstream call: no charge may go untraced.
    const record: InquiryRecord = {
      trackId,
      clientId: caller.clientId,
      // Undefined when no end user: left out of the stored JSON.
      subjectSha256: caller.subject ? sha256(caller.subject) : undefined,
      operation: request.operation,
      requestHandlingType: request.requestHandlingType,
      fingerprint,
      status: 'pending',
      createdAt: new Date().toISOString(),
    };
    try {
      await guardStore(() => this.records.create(record, this.ttlSeconds), trackId);
    } catch (error) {
      // Refused (503): nothing was sent, so nothing of this request may stay. A create that
      // timed out may still land later: the delete is sent after it on the same connection,
      // so Redis runs it after the late create (docs/behaviour.md, "Failure handling").
      void this.records.discard(trackId).catch(() => undefined);
      if (key) void this.idempotency.release(key).catch(() => undefined);
      throw error;
    }

    // 4. Call the upstream with the stamped trackId.
    const started = performance.now();
    const outcome = await this.call(request, trackId, facts);
    this.metrics.inquiries.inc({ operation: request.operation, status: outcome.status });
    this.logOutcome(
      {
        trackId,
        clientId: caller.clientId,
        operation: request.operation,
        requestHandlingType: request.requestHandlingType,
        outcome: outcome.status,
        upstreamMs: Math.round(performance.now() - started),
      },
      outcome.response.status,
      facts,
    );

    // 5. Settle the record and the key, and answer.
    return this.settle(record, outcome, key);
  }

  /**
   * `GET /v1/inquiries/{trackId}`: only the client that made the inquiry sees it, and for an
   * app's end user (JWT `sub`) only that user: one user never sees another's IBAN owners.
   */
  async find(caller: Caller, trackId: string): Promise<ReturnType<typeof publicView>> {
    const record = /^[0-9a-f-]{36}$/i.test(trackId)
      ? await guardStore(() => this.records.get(trackId.toLowerCase()))
      : null;
    const visible =
      record !== null &&
      record.clientId === caller.clientId &&
      (caller.subject === undefined || record.subjectSha256 === sha256(caller.subject));
    if (!visible) throw new ProblemException('not_found', 'No inquiry with this trackId.');
    return publicView(record);
  }

  /**
   * The trace of every possible charge, no personal data in it. Its facts go on the request's
   * access line (one line per request, written when the answer is sent); a caller that hung up
   * has had its line already, so the inquiry then writes a line of its own (`"msg":"inquiry"`,
   * same `requestId`), as it does outside an HTTP request.
   */
  private logOutcome(fields: InquiryLogFields, status: number, facts?: RequestFacts): void {
    if (facts && !facts.accessLogged) facts.inquiry = fields;
    else this.logger.log({ msg: 'inquiry', ...requestLogFields(facts), ...fields, status });
  }

  /** One upstream inquiry; every failure becomes its outcome (docs/api.md §3), none is thrown. */
  private async call(request: InquiryRequest, trackId: string, facts?: RequestFacts): Promise<InquiryOutcome> {
    const body = { ...request.fields, requestHandlingType: request.requestHandlingType, trackId };
    try {
      return successOutcome(trackId, await this.upstream.inquire(request.operation, body, facts));
    } catch (error) {
      const line = failureLogLine(error, trackId);
      this.logger[line.level]({ msg: line.message, ...requestLogFields(facts) });
      return failureOutcome(error, trackId, this.circuitRetryAfter);
    }
  }

  /**
   * The caller gets the answer at once; the record and the key's answer are written after it
   * (owed to the store and retried until it is back when it fails just then: `Settlements`). A key whose request cannot
   * have been charged is released instead, so a retry runs afresh.
   */
  private async settle(record: InquiryRecord, outcome: InquiryOutcome, key?: HeldKey): Promise<InquiryResponse> {
    const { trackId } = record;
    // Field by field rather than spread: this runs once per inquiry (docs/performance.md).
    const settled: InquiryRecord = {
      trackId,
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
    };
    // Owed until stored (or the record has expired): the caller is answered either way.
    const until = Date.parse(record.createdAt) + this.ttlSeconds * 1000;
    const ttlLeft = () => Math.ceil((until - Date.now()) / 1000);
    const response: StoredResponse = { ...outcome.response, trackId };
    // Sent together (one round trip); the record's command goes first.
    await Promise.all([
      this.settlements.write(`record of ${trackId}`, () => this.records.settle(settled, ttlLeft()), until),
      key &&
        this.settlements.write(
          `idempotency result of ${trackId}`,
          () => (outcome.notCharged ? this.idempotency.release(key) : this.idempotency.complete(key, response)),
          until,
        ),
    ]);
    return { ...response, replayed: false };
  }
}

/** SHA-256 over the route and the normalised fields, in a fixed key order. */
function fingerprintOf(request: InquiryRequest): string {
  const fields = Object.keys(request.fields)
    .sort()
    .map((key) => [key, request.fields[key]]);
  return sha256(JSON.stringify([request.route, request.requestHandlingType, fields]));
}

/**
 * The series alerts read about inquiries exist at 0 from start-up, so that increase() sees the
 * first event after a start (a lone `unknown` outcome, a burst of 502s between two scrapes):
 * a counter first scraped at 1 shows no rise (docs/operations.md, "Metrics").
 */
function zeroInquirySeries(metrics: GatewayMetrics): void {
  for (const operation of INQUIRY_OPERATIONS) {
    for (const status of ['succeeded', 'failed', 'unknown'] as const) metrics.inquiries.inc({ operation, status }, 0);
    for (const [status, code] of INQUIRY_SERVER_ERRORS) {
      metrics.httpRequests.zero({ route: `/v1/kyc/${operation}`, method: 'POST', status, code });
    }
  }
}

/** The 5xx answers of an inquiry (docs/api.md §3), as the request histogram labels them. */
const INQUIRY_SERVER_ERRORS: ReadonlyArray<[status: number, code: string]> = [
  [500, 'internal'],
  [502, 'upstream_error'],
  [503, 'upstream_unavailable'],
  [503, 'store_unavailable'],
  [504, 'upstream_timeout'],
];
