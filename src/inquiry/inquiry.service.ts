import { createHash, randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { redactText } from '../observability/redact.js';
import { PROBLEM_CONTENT_TYPE, ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import { TokenUnavailableError } from '../token/token-unavailable.error.js';
import { TokenProvider } from '../token/token.provider.js';
import { UpstreamClient, type InquiryOperation, type UpstreamSuccess } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import {
  publicView,
  type IdempotencyClaim,
  type InquiryRecord,
  type InquiryStatus,
  type StoredResponse,
} from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';
import type { RequestHandlingType } from './validation/decorators.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

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

interface Outcome {
  status: InquiryStatus;
  record: Partial<InquiryRecord>;
  response: Omit<StoredResponse, 'trackId'>;
  /**
   * True when nothing can have been charged (never sent, or refused by the upstream before
   * it registered the trackId: 401, 402, 403): the Idempotency-Key is released, so a retry
   * runs afresh once the cause is fixed, instead of replaying this answer for a day.
   */
  notCharged: boolean;
}

/** Background retries of a record or claim write that failed right after the upstream answered. */
const PERSIST_RETRY_DELAYS_MS = [200, 1000, 5000];

/**
 * The gateway's main job (internal-api.md §2): stamp a trackId, record the inquiry before the
 * upstream sees it, call the upstream with the shared token, settle the record, and make a
 * retry with the same Idempotency-Key replay the answer instead of charging again
 * (upstream-api-v5.md §4.4 rules 1, 5 and 9).
 */
@Injectable()
export class InquiryService {
  private readonly logger = new Logger(InquiryService.name);
  private readonly ttlSeconds: number;
  /**
   * The longest a live request can hold an Idempotency-Key, with room to spare: waiting for a
   * token renewal (lock TTL: 2 timeouts + 2 s, plus the winner's two GetToken calls), the
   * inquiry, up to two renewals after a 401 and the retry: about 8 timeouts + 7 s. A claim
   * still in flight after 10 timeouts + 30 s belongs to a request that died.
   */
  private readonly inFlightLeaseMs: number;
  /** Seconds until the open circuit lets a trial call through, for `Retry-After`. */
  private readonly circuitRetryAfter: string;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly records: InquiryStore,
    private readonly idempotency: IdempotencyStore,
    private readonly tokens: TokenProvider,
    private readonly upstream: UpstreamClient,
    private readonly metrics: GatewayMetrics,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
    const upstreamSettings = config.get('upstream', { infer: true });
    this.inFlightLeaseMs = upstreamSettings.timeoutMs * 10 + 30_000;
    this.circuitRetryAfter = String(Math.ceil(upstreamSettings.circuitResetMs / 1000));
  }

  async execute(caller: Caller, request: InquiryRequest, idempotencyKey?: string): Promise<InquiryResponse> {
    const trackId = randomUUID();
    const fingerprint = fingerprintOf(request);
    const scope = callerScope(caller);
    const keySha256 = idempotencyKey === undefined ? undefined : sha256(idempotencyKey);
    const claim: IdempotencyClaim = { trackId, fingerprint, state: 'in_flight', claimedAt: Date.now() };

    if (keySha256) {
      // A second round only when the first found an abandoned claim that sent nothing.
      for (let round = 0; ; round++) {
        const earlier = await this.guardStore(() => this.idempotency.claim(scope, keySha256, claim, this.ttlSeconds));
        if (!earlier) break;
        const answer = await this.answerRepeat(scope, keySha256, earlier, fingerprint);
        if (answer) return answer;
        if (round > 0)
          throw new ProblemException(
            'idempotency_key_in_use',
            'A request with this Idempotency-Key is still in progress.',
          );
      }
    }

    const record: InquiryRecord = {
      trackId,
      clientId: caller.clientId,
      ...(caller.subject ? { subjectSha256: sha256(caller.subject) } : {}),
      operation: request.operation,
      requestHandlingType: request.requestHandlingType,
      fingerprint,
      status: 'pending',
      createdAt: new Date().toISOString(),
    };
    try {
      // Recorded before the upstream call: no charge may go untraced.
      await this.guardStore(() => this.records.create(record, this.ttlSeconds), trackId);
    } catch (error) {
      if (keySha256) await this.idempotency.release(scope, keySha256, trackId).catch(() => undefined);
      throw error;
    }

    const started = performance.now();
    const outcome = await this.callUpstream(request, trackId);
    this.metrics.inquiries.inc({ operation: request.operation, status: outcome.status });
    // One line per inquiry: the trace of every possible charge (no personal data in it).
    this.logger.log(
      `inquiry ${trackId} ${request.operation}/${request.requestHandlingType} client=${caller.clientId} ` +
        `-> ${outcome.status} http=${outcome.response.status} in ${Math.round(performance.now() - started)} ms`,
    );
    const settled: InquiryRecord = {
      ...record,
      status: outcome.status,
      completedAt: new Date().toISOString(),
      ...outcome.record,
    };
    await this.persist(`record of ${trackId}`, () => this.records.settle(settled));

    const response: StoredResponse = { ...outcome.response, trackId };
    if (keySha256) {
      await this.persist(`idempotency result of ${trackId}`, () =>
        outcome.notCharged
          ? this.idempotency.release(scope, keySha256, trackId)
          : this.idempotency.complete(scope, keySha256, { ...claim, state: 'done', response }),
      );
    }
    return { ...response, replayed: false };
  }

  /**
   * Writes that follow an upstream answer: the caller gets the answer at once; a write that
   * fails (a Redis blip) is retried in the background so the record and the replay catch up.
   */
  private async persist(what: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
      return;
    } catch (error) {
      this.logger.warn(`${what} not stored (${(error as Error).message}); retrying in the background`);
    }
    const retry = (attempt: number) => {
      const timer = setTimeout(() => {
        write().then(
          () => this.logger.log(`${what} stored on retry ${attempt + 1}`),
          (error: Error) => {
            if (attempt + 1 < PERSIST_RETRY_DELAYS_MS.length) retry(attempt + 1);
            else this.logger.error(`${what} could not be stored: ${error.message}`);
          },
        );
      }, PERSIST_RETRY_DELAYS_MS[attempt]);
      timer.unref();
    };
    retry(0);
  }

  /**
   * `GET /v1/inquiries/{trackId}`: only the client that made the inquiry sees it, and for an
   * app's end user (JWT `sub`) only that user: one user never sees another's IBAN owners.
   */
  async find(caller: Caller, trackId: string): Promise<ReturnType<typeof publicView>> {
    const record = /^[0-9a-f-]{36}$/i.test(trackId)
      ? await this.guardStore(() => this.records.get(trackId.toLowerCase()))
      : null;
    const visible =
      record !== null &&
      record.clientId === caller.clientId &&
      (caller.subject === undefined || record.subjectSha256 === sha256(caller.subject));
    if (!visible) throw new ProblemException('not_found', 'No inquiry with this trackId.');
    return publicView(record);
  }

  /**
   * The key was claimed before. Returns the answer to give, or null when the earlier claim
   * was abandoned before anything was sent and has been released (the caller claims afresh).
   */
  private async answerRepeat(
    scope: string,
    keySha256: string,
    earlier: IdempotencyClaim,
    fingerprint: string,
  ): Promise<InquiryResponse | null> {
    if (earlier.fingerprint !== fingerprint) {
      throw new ProblemException('idempotency_key_reused', 'This Idempotency-Key was used with a different request.');
    }
    if (earlier.state === 'done' && earlier.response) {
      this.metrics.idempotentReplays.inc();
      return { ...earlier.response, replayed: true };
    }
    if (earlier.claimedAt !== undefined && Date.now() - earlier.claimedAt > this.inFlightLeaseMs) {
      const concluded = await this.concludeAbandoned(scope, keySha256, earlier);
      return concluded ? { ...concluded, replayed: true } : null;
    }
    throw new ProblemException('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress.', {
      trackId: earlier.trackId,
    });
  }

  /**
   * The request that claimed this key died before storing its answer (its process crashed,
   * or the store failed just then). Without a record it never reached the upstream (the record
   * is written first): the claim is released. Otherwise it is never sent again: the answer is
   * made from its record (a success replayed, a failure 502, anything unfinished 504 and the
   * record `unknown`, as it may have been charged) and stored for every later retry.
   */
  private async concludeAbandoned(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
  ): Promise<StoredResponse | null> {
    const { trackId } = claim;
    const record = await this.guardStore(() => this.records.get(trackId));
    if (!record) {
      this.logger.warn(`idempotency claim for ${trackId} abandoned before anything was sent; released`);
      await this.guardStore(() => this.idempotency.release(scope, keySha256, trackId));
      return null;
    }
    let response: StoredResponse;
    if (record.status === 'succeeded') {
      response = {
        status: 200,
        contentType: JSON_CONTENT_TYPE,
        trackId,
        body: { trackId, status: 'succeeded', data: record.data },
      };
    } else {
      if (record.status === 'pending') {
        await this.records
          .settle({ ...record, status: 'unknown', completedAt: new Date().toISOString() })
          .catch(() => undefined);
      }
      const problem =
        record.status === 'failed'
          ? new ProblemException('upstream_error', 'The first request with this Idempotency-Key failed.', { trackId })
          : new ProblemException(
              'upstream_timeout',
              'The first request with this Idempotency-Key did not finish; its outcome is unknown.',
              { trackId },
            );
      response = { status: problem.status, contentType: PROBLEM_CONTENT_TYPE, trackId, body: problem.toBody() };
    }
    this.logger.warn(`inquiry ${trackId}: abandoned in flight (record ${record.status}); answer concluded`);
    await this.idempotency.complete(scope, keySha256, { ...claim, state: 'done', response }).catch(() => undefined);
    return response;
  }

  /**
   * One upstream inquiry with the stamped trackId. After a 401 the token is renewed once and
   * the call repeated with the same trackId: the upstream rejected the first attempt before
   * registering it (§5.1 is checked before the trackId is used). No other failure is retried.
   */
  private async callUpstream(request: InquiryRequest, trackId: string): Promise<Outcome> {
    const body = { ...request.fields, requestHandlingType: request.requestHandlingType, trackId };
    try {
      let token = await this.tokens.getAccessToken();
      let result: UpstreamSuccess;
      try {
        result = await this.upstream.inquire(request.operation, body, token);
      } catch (error) {
        if (!(error instanceof UpstreamError && error.isUnauthorized)) throw error;
        token = await this.tokens.renewAfterRejection(token);
        result = await this.upstream.inquire(request.operation, body, token);
      }
      return {
        status: 'succeeded',
        notCharged: false,
        record: { upstream: { code: result.meta.code, message: result.meta.message }, data: result.data },
        response: {
          status: 200,
          contentType: JSON_CONTENT_TYPE,
          body: { trackId, status: 'succeeded', data: result.data },
        },
      };
    } catch (error) {
      return this.failureOutcome(error, trackId);
    }
  }

  private failureOutcome(error: unknown, trackId: string): Outcome {
    const fail = (
      status: InquiryStatus,
      problem: ProblemException,
      notCharged: boolean,
      upstream?: InquiryRecord['upstream'],
    ): Outcome => {
      problem.trackId = trackId;
      return {
        status,
        notCharged,
        record: upstream ? { upstream } : {},
        response: {
          status: problem.status,
          contentType: PROBLEM_CONTENT_TYPE,
          body: problem.toBody(),
          ...(Object.keys(problem.headers).length > 0 ? { headers: problem.headers } : {}),
        },
      };
    };

    if (error instanceof TokenUnavailableError) {
      this.logger.warn(`inquiry ${trackId} not sent: ${error.message}`);
      return fail(
        'failed',
        new ProblemException('upstream_unavailable', 'The verification service cannot be used right now.'),
        true,
      );
    }
    if (!(error instanceof UpstreamError)) {
      this.logger.error(
        `inquiry ${trackId} failed unexpectedly: ${error instanceof Error ? error.name : typeof error}`,
      );
      // The request may have gone out: keep it replayable and unknown, never retried blindly.
      return fail('unknown', new ProblemException('internal', 'An unexpected error occurred.'), false);
    }

    const { httpStatus, code, upstreamMessage } = error.details;
    const message = upstreamMessage ? redactText(upstreamMessage) : undefined;
    const upstream = code !== undefined ? { code, ...(message ? { message } : {}) } : undefined;
    this.logger.warn(`inquiry ${trackId}: ${error.message}`);
    switch (error.kind) {
      case 'not_sent':
        return error.details.circuitOpen
          ? fail(
              'failed',
              new ProblemException(
                'upstream_unavailable',
                'The verification service is failing; inquiries are paused briefly.',
                { headers: { 'Retry-After': this.circuitRetryAfter } },
              ),
              true,
            )
          : fail(
              'failed',
              new ProblemException('upstream_unavailable', 'The verification service could not be reached.'),
              true,
            );
      case 'outcome_unknown':
        return error.details.timedOut
          ? fail(
              'unknown',
              new ProblemException(
                'upstream_timeout',
                'The verification service did not answer in time; the outcome is unknown.',
              ),
              false,
            )
          : fail(
              'unknown',
              new ProblemException(
                'upstream_error',
                'The connection to the verification service broke; the outcome is unknown.',
              ),
              false,
            );
      case 'malformed':
        return fail(
          'unknown',
          new ProblemException('upstream_error', 'The verification service sent an unreadable answer.'),
          false,
        );
      case 'rejected':
        break;
    }
    if (httpStatus === 400 || httpStatus === 422) {
      const problem = new ProblemException(
        'upstream_rejected',
        message ?? 'The verification service rejected the request.',
        {
          errors: error.details.fieldErrors?.map((e) => ({ field: e.field, message: redactText(e.message) })),
        },
      );
      return fail('failed', problem, false, upstream);
    }
    if (httpStatus === 401 || httpStatus === 403 || httpStatus === 402) {
      // Credentials rejected, account disabled, or credit exhausted: nothing a caller can fix,
      // and refused before the upstream registered the trackId, so nothing was charged.
      return fail(
        'failed',
        new ProblemException('upstream_unavailable', 'The verification service cannot be used right now.'),
        true,
        upstream,
      );
    }
    return fail(
      'failed',
      new ProblemException('upstream_error', 'The verification service reported an error.'),
      false,
      upstream,
    );
  }

  /** Store failures become 503 store_unavailable before anything is sent upstream. */
  private async guardStore<T>(operation: () => Promise<T>, trackId?: string): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        this.logger.error(`record store unavailable: ${error.message}`);
        throw new ProblemException(
          'store_unavailable',
          'The record store is unavailable; nothing was sent to the verification service.',
          {
            trackId,
            headers: { 'Retry-After': '1' },
          },
        );
      }
      throw error;
    }
  }
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * Whose Idempotency-Keys these are: the client, and for an app's end user (JWT `sub`) that
 * user within the client, so two users of one app never share keys or replays. The subject is
 * hashed: it may be personal data and ends up in a Redis key name.
 */
function callerScope(caller: Caller): string {
  return caller.subject === undefined ? caller.clientId : `${caller.clientId}:u:${sha256(caller.subject).slice(0, 32)}`;
}

/** SHA-256 over the route and the normalised fields, in a fixed key order. */
function fingerprintOf(request: InquiryRequest): string {
  const fields = Object.keys(request.fields)
    .sort()
    .map((key) => [key, request.fields[key]]);
  return sha256(JSON.stringify([request.route, request.requestHandlingType, fields]));
}
