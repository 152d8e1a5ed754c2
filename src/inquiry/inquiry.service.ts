import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import { sha256 } from '../crypto/sha256.js';
import type { SubjectHasher } from '../crypto/subject-hash.js';
import { subjectHasherFrom } from './subject-pseudonyms.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { requestLogFields, type InquiryLogFields, type RequestFacts } from '../observability/request-context.js';
import { ProblemException } from '../problem/problem.js';
import { LedgerQueue } from '../ledger/ledger-queue.js';
import { LedgerReads } from '../ledger/ledger-reads.js';
import { AuthorizedUpstream, type CallBudget } from '../token/authorized-upstream.js';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import { reservationRecord, type ReserveRequest, type ReserveResult } from '../budget/budget.store.js';
import { Budgets } from '../budget/budgets.js';
import { LOCATION_HEADER, PREFERENCE_APPLIED_HEADER, RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { IdempotencyService, msUntilSettledAnswerDue, type ClaimResult, type HeldKey } from './idempotency.service.js';
import {
  JSON_CONTENT_TYPE,
  failureLogLine,
  failureOutcome,
  successOutcome,
  type InquiryOutcome,
} from './inquiry-outcome.js';
import { publicView, type InquiryRecord, type StoredResponse } from './inquiry-record.js';
import { InquiryStore } from './inquiry.store.js';
import { DEADLINE_MARGIN_MS, inquiryBudget, msUntilOverdue, statusNow } from './inquiry-deadline.js';
import { InquiryWaits } from './inquiry-waits.js';
import { SettleTimes } from './settle-times.js';
import { Settlements } from './settlements.js';
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
 * `Prefer: respond-async, wait=<s>` (docs/api.md, "Asynchronous answers"): answer 202 if the
 * inquiry has not settled within `waitMs`.
 */
export interface AsyncPreference {
  waitMs: number;
  /** Aborted when the caller hangs up: a keyed retry's held wait frees its slot at once. */
  gone?: AbortSignal;
}

/** `GET /v1/inquiries/{trackId}`: the record as the caller may see it, and how long it was waited for. */
export interface InquiryView {
  view: ReturnType<typeof publicView>;
  /** Seconds of `Prefer: wait` applied (the answer was held), for `Preference-Applied`. */
  waitedSeconds?: number;
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
  private readonly upstreamSettings: AppConfig['upstream'];
  /**
   * Every inquiry this process has taken and not yet settled, answered or not (a 202's
   * settlement is owed): the shutdown drain waits until this is empty.
   */
  private readonly running = new Set<Promise<unknown>>();
  /** False once shutdown has begun: a new inquiry is refused before anything is written or sent. */
  private accepting = true;
  /** Seconds until the open circuit lets a trial call through, for `Retry-After`. */
  private readonly circuitRetryAfter: string;
  /** End users' pseudonyms, keyed (crypto/subject-hash.ts). */
  private readonly subjects: SubjectHasher;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly records: InquiryStore,
    private readonly idempotency: IdempotencyService,
    private readonly upstream: AuthorizedUpstream,
    private readonly metrics: GatewayMetrics,
    private readonly settlements: Settlements,
    private readonly waits: InquiryWaits,
    private readonly settleTimes: SettleTimes,
    private readonly budgets: Budgets,
    private readonly ledgerReads: LedgerReads,
    private readonly ledgerQueue: LedgerQueue,
    private readonly prices: InquiryPrices,
  ) {
    this.ttlSeconds = config.get('idempotency', { infer: true }).ttlSeconds;
    this.upstreamSettings = config.get('upstream', { infer: true });
    this.circuitRetryAfter = String(Math.ceil(config.get('upstream', { infer: true }).circuitResetMs / 1000));
    this.subjects = subjectHasherFrom(config);
    zeroInquirySeries(metrics);
  }

  /**
   * `facts`: the HTTP request's (request-context.ts), for the lines this inquiry writes and its
   * trace. `prefer`: the caller asked for an asynchronous answer (202 unless settled in the wait).
   * Once shutdown has begun a new inquiry is refused (503 `upstream_unavailable`, `Retry-After`):
   * nothing is written or sent, so the caller's retry on another replica is safe; one taken
   * before is in `running` (checked and added in the same tick), so the drain waits for it.
   */
  execute(
    caller: Caller,
    request: InquiryRequest,
    idempotencyKey?: string,
    facts?: RequestFacts,
    prefer?: AsyncPreference,
  ): Promise<InquiryResponse> {
    if (!this.accepting) return Promise.reject(refusedAtShutdown());
    return this.track(this.inquire(caller, request, idempotencyKey, facts, prefer));
  }

  /** The five steps; an asynchronous answer leaves its settlement owed (`owe`). */
  private async inquire(
    caller: Caller,
    request: InquiryRequest,
    idempotencyKey?: string,
    facts?: RequestFacts,
    prefer?: AsyncPreference,
  ): Promise<InquiryResponse> {
    // 1. Stamp.
    const trackId = randomUUID();
    const fingerprint = fingerprintOf(request);

    // 2. Claim the key: a repeat is answered from the earlier request and goes no further.
    let key: HeldKey | undefined;
    if (idempotencyKey !== undefined) {
      const claimed = await this.claimKey(caller, request, idempotencyKey, trackId, fingerprint, prefer).catch(
        (error: unknown) => {
          // The trackId was stamped: a refusal (503) names it (docs/api.md §3); a 409 names the
          // request in flight instead. A 422 names none: no record was written under this one,
          // and a trackId in an answer is one that can be read.
          if (
            error instanceof ProblemException &&
            error.trackId === undefined &&
            error.code !== 'idempotency_key_reused'
          )
            error.trackId = trackId;
          throw error;
        },
      );
      if ('replay' in claimed) return { ...claimed.replay, replayed: true };
      if ('accepted' in claimed) return claimed.accepted;
      key = claimed.held;
    }

    // 3. Record, before the upstream call: no charge may go untraced.
    const createdAt = Date.now();
    const budget = inquiryBudget(this.upstreamSettings, request.requestHandlingType, createdAt);
    // Spend budgets (docs/api.md §6): after the claim, so a replay is answered even when the
    // budget is spent; a refusal (429) names no trackId. No budget configured: no reservation.
    const reservation = this.budgets.reservationFor(
      caller.clientId,
      request.operation,
      request.requestHandlingType,
      trackId,
      budget.deadline + DEADLINE_MARGIN_MS,
    );
    const record: InquiryRecord = {
      trackId,
      clientId: caller.clientId,
      // Undefined when no end user: left out of the stored JSON.
      subjectSha256: caller.subject ? this.subjects.hash(caller.subject) : undefined,
      operation: request.operation,
      requestHandlingType: request.requestHandlingType,
      fingerprint,
      status: 'pending',
      createdAt: new Date(createdAt).toISOString(),
      deadlineAt: new Date(budget.deadline).toISOString(),
      requestId: facts?.requestId,
      costUnits: reservation?.units ?? this.prices.unitsOf(request.operation, request.requestHandlingType),
      ...(reservation ? { reservation: reservationRecord(reservation) } : {}),
    };
    await this.open(record, reservation, key);

    // 4 and 5. Call the upstream and settle; an asynchronous caller may be answered first.
    const settled = this.callAndSettle(caller, request, record, budget, key, facts, reservation);
    if (!prefer) return settled;
    const answered = await settledWithin(settled, prefer.waitMs);
    if (answered) return answered;
    this.owe(settled);
    this.metrics.inquiriesAccepted.inc({ operation: request.operation });
    return this.accepted(trackId, request.requestHandlingType, createdAt);
  }

  /**
   * Writes the record, the ledger's duty and (with a budget) the reservation before anything
   * is sent (docs/architecture.md, "The ledger"): on standalone Redis all in the record's one
   * script; otherwise the duty's script (which reserves first) and the record's SET in one
   * socket write, the duty's first. A refused reservation writes no duty (and, beside the
   * record, its record is deleted at once): 429 without a trackId. A store failure is 503 with it.
   */
  private async open(record: InquiryRecord, reservation: ReserveRequest | undefined, key?: HeldKey): Promise<void> {
    const { trackId } = record;
    let refused: Extract<ReserveResult, { admitted: false }> | undefined;
    let failure: Error | undefined;
    if (this.records.accountsWithRecord) {
      try {
        const admitted = await this.records.create(record, this.ttlSeconds, reservation);
        if (admitted?.admitted === false) refused = admitted;
      } catch (error) {
        failure = asError(error);
      }
    } else {
      const [owed, created] = await Promise.allSettled([
        this.ledgerQueue.owe(record, reservation),
        this.records.create(record, this.ttlSeconds),
      ]);
      if (owed.status === 'fulfilled' && owed.value?.admitted === false) refused = owed.value;
      if (created.status === 'rejected') failure = asError(created.reason);
      else if (owed.status === 'rejected') failure = asError(owed.reason);
    }
    if (refused === undefined && failure === undefined) return;
    if (key) {
      // A refusal is answered only once its key is free: a retry at once, on any replica, is
      // refused again rather than told 409. Behind a failing store it is not waited for.
      const released = this.idempotency.release(key).catch(() => undefined);
      if (failure === undefined) await released;
    }
    // Nothing was sent, so nothing of this request may stay: owed until stored (Settlements),
    // as a write that timed out may still land later, even re-sent by the client after a
    // reconnect; the deletes follow it on the same connection, so Redis runs them after it
    // (docs/behaviour.md, "Failure handling"). Refused by a budget, only a record written
    // beside the duty is left (standalone: nothing was written); failed, the duty too.
    if (failure !== undefined || !this.records.accountsWithRecord) {
      void this.settlements.write(
        `discard of ${trackId}`,
        async () => {
          await Promise.all([
            this.records.discard(trackId),
            failure && this.ledgerQueue.discard(trackId, reservation !== undefined),
          ]);
        },
        this.owedUntil(record),
      );
    }
    if (failure === undefined) throw this.budgets.refusal(reservation!, refused!);
    // The trackId was stamped: the problem names it (docs/api.md §3).
    if (failure instanceof ProblemException) failure.trackId = trackId;
    throw failure;
  }

  /** Until when a write about this record is owed: after it, the record has expired anyway. */
  private owedUntil(record: InquiryRecord): number {
    return Date.parse(record.createdAt) + this.ttlSeconds * 1000;
  }

  /**
   * `GET /v1/inquiries/{trackId}`: only the client that made the inquiry sees it, and for an
   * app's end user (JWT `sub`) only that user: one user never sees another's IBAN owners.
   * With `waitMs`, a `pending` record is waited for (woken by its settlement on any replica)
   * until it settles, the wait ends, or it is overdue and reads `unknown`; `gone` (the caller
   * hung up) ends the wait and frees its slot at once.
   */
  async find(caller: Caller, trackId: string, waitMs = 0, gone?: AbortSignal): Promise<InquiryView> {
    if (!/^[0-9a-f-]{36}$/i.test(trackId)) throw notFound();
    const id = trackId.toLowerCase();
    // Held before the first read, so a settlement between the read and the wait still wakes it.
    const wait = waitMs > 0 ? await this.waits.hold(id) : undefined;
    try {
      // Once the Redis record has expired, the ledger answers for years (docs/api.md §6).
      let record = this.visible(caller, (await this.records.get(id)) ?? (await this.ledgerReads.inquiry(id)));
      if (waitMs <= 0 || statusNow(record) !== 'pending') return { view: publicView(record) };
      if (!wait) throw this.waits.refusal();
      const started = Date.now();
      let left = Math.min(waitMs, msUntilOverdue(record));
      // Rounds, not one wait: a timer may fire a few ms before Date.now() reaches its time
      // (libuv's loop clock), and a record read then is not yet overdue. Each round waits for
      // what is left; a settlement, a hang-up, the end of the caller's wait, or a round cut
      // short (shutdown: held waits end at once) ends it.
      while (left > 0) {
        const roundStarted = Date.now();
        const woken = await wait.until(left, gone);
        record = this.visible(caller, await this.records.get(id));
        if (woken || gone?.aborted || statusNow(record) !== 'pending') break;
        // Cut short: it ended well before its time (for a short round, before half of it).
        if (Date.now() - roundStarted < Math.max(left - EARLY_TIMER_MS, left / 2)) break;
        left = Math.min(started + waitMs - Date.now(), msUntilOverdue(record));
      }
      return { view: publicView(record), waitedSeconds: Math.round((Date.now() - started) / 1000) };
    } finally {
      wait?.release();
    }
  }

  /** A step of the shutdown sequence (src/http/shutdown-sequence.ts): new inquiries are refused from now on. */
  stopAccepting(): void {
    this.accepting = false;
  }

  /**
   * A step of the shutdown sequence, after `stopAccepting`: waits until every inquiry taken
   * before it has settled (a 202's background settlement included), however many there are and
   * whenever they came. Bounded by the longest deadline an inquiry taken now could have (each
   * is held to its own, inquiry-deadline.ts), so a stuck one cannot hold the process for ever.
   * Returns how many were still running when the bound was reached (0 normally).
   */
  async drain(): Promise<number> {
    const bound = inquiryBudget(this.upstreamSettings, 'advanced', Date.now()).deadline + DEADLINE_MARGIN_MS;
    if (this.running.size > 0) {
      this.logger.log(`shutting down with ${this.running.size} inquiry(ies) running; waiting for them`);
    }
    // A loop, not one allSettled over the set as it stands: an inquiry may finish by handing
    // its settlement to a new entry (owe), and every entry counts.
    while (this.running.size > 0 && Date.now() < bound) {
      await settledWithin(Promise.allSettled([...this.running]), bound - Date.now());
    }
    if (this.running.size > 0)
      this.logger.error(`${this.running.size} inquiry(ies) still running at the drain's bound`);
    return this.running.size;
  }

  private visible(caller: Caller, record: InquiryRecord | null): InquiryRecord {
    const visible =
      record !== null &&
      record.clientId === caller.clientId &&
      (caller.subject === undefined || this.subjects.matches(caller.subject, record.subjectSha256));
    if (!visible) throw notFound();
    return record;
  }

  /**
   * Claims the Idempotency-Key. With `respond-async`, a request still in flight under the key
   * is waited for like a long-poll (up to the caller's wait), then answered with the replay
   * once it has settled, or the same 202 as the first got (docs/api.md, "Asynchronous answers").
   */
  private async claimKey(
    caller: Caller,
    request: InquiryRequest,
    idempotencyKey: string,
    trackId: string,
    fingerprint: string,
    prefer?: AsyncPreference,
  ): Promise<ClaimResult | { accepted: InquiryResponse }> {
    const until = Date.now() + (prefer?.waitMs ?? 0);
    // Every round ends or waits: for the first request's settlement notice, or (settled, its
    // answer not stored yet) for that answer to be stored or made from the record.
    for (;;) {
      try {
        return await this.idempotency.claim(caller, idempotencyKey, trackId, fingerprint);
      } catch (error) {
        const inFlight = error instanceof ProblemException && error.code === 'idempotency_key_in_use';
        if (!prefer || !inFlight || !error.trackId) throw error;
        const left = until - Date.now();
        if (left <= 0) return { accepted: this.accepted(error.trackId, request.requestHandlingType) };
        const wait = await this.waits.hold(error.trackId);
        if (!wait) throw this.waits.refusal();
        let woken: boolean;
        try {
          // As for a long-poll: held first, then read, so a settlement just before the hold is
          // seen now rather than after the whole wait.
          const first = await this.records.get(error.trackId);
          if (first && first.status !== 'pending') {
            // Settled, its notice sent already: a timer, not the held wait, until the answer is
            // stored (or released), or a success is due to be rebuilt from the record
            // (IdempotencyService.answerRepeat); a failure's answer is only ever stored: polled.
            wait.release();
            const due = first.status === 'succeeded' ? msUntilSettledAnswerDue(first) : UNSTORED_FAILURE_POLL_MS;
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
          return { accepted: this.accepted(error.trackId, request.requestHandlingType) };
      }
    }
  }

  /** 202 Accepted: where and when to read the result (docs/api.md, "Asynchronous answers"). */
  private accepted(trackId: string, handling: RequestHandlingType, startedAt?: number): InquiryResponse {
    return {
      status: 202,
      contentType: JSON_CONTENT_TYPE,
      trackId,
      body: { trackId, status: 'pending' },
      headers: {
        [LOCATION_HEADER]: `/v1/inquiries/${trackId}`,
        [PREFERENCE_APPLIED_HEADER]: 'respond-async',
        [RETRY_AFTER_HEADER]: String(this.settleTimes.secondsLeft(handling, startedAt)),
      },
      replayed: false,
    };
  }

  /** Keeps an accepted inquiry's settlement in view until it is done (shutdown waits for it). */
  private owe(settled: Promise<InquiryResponse>): void {
    void this.track(settled).catch((error: unknown) => {
      this.logger.error(`accepted inquiry failed unexpectedly: ${error instanceof Error ? error.name : 'unknown'}`);
    });
  }

  /** `work` is in `running` until it ends, however it ends. */
  private track<T>(work: Promise<T>): Promise<T> {
    const running = work.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(running);
    void running.then(() => this.running.delete(running));
    return work;
  }

  /** Steps 4 and 5: the upstream call, its log line and metric, the settlement. Never rejects. */
  private async callAndSettle(
    caller: Caller,
    request: InquiryRequest,
    record: InquiryRecord,
    budget: CallBudget,
    key: HeldKey | undefined,
    facts: RequestFacts | undefined,
    reservation?: ReserveRequest,
  ): Promise<InquiryResponse> {
    const { trackId } = record;
    const started = performance.now();
    const outcome = await this.call(request, trackId, budget, facts);
    const upstreamMs = performance.now() - started;
    this.settleTimes.observe(request.requestHandlingType, upstreamMs);
    this.metrics.inquiries.inc({ operation: request.operation, status: outcome.status });
    this.logOutcome(
      {
        trackId,
        clientId: caller.clientId,
        operation: request.operation,
        requestHandlingType: request.requestHandlingType,
        outcome: outcome.status,
        upstreamMs: Math.round(upstreamMs),
      },
      outcome.response.status,
      facts,
    );
    return this.settle(record, outcome, key, reservation !== undefined);
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
  private async call(
    request: InquiryRequest,
    trackId: string,
    budget: CallBudget,
    facts?: RequestFacts,
  ): Promise<InquiryOutcome> {
    const body = { ...request.fields, requestHandlingType: request.requestHandlingType, trackId };
    try {
      return successOutcome(trackId, await this.upstream.inquire(request.operation, body, budget, facts));
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
  private async settle(
    record: InquiryRecord,
    outcome: InquiryOutcome,
    key?: HeldKey,
    reserved = false,
  ): Promise<InquiryResponse> {
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
      // Only the final successful attempt is charged; a failed one releases what was reserved
      // (docs/upstream-api.md §4.4 rule 9): `failed` is `no`, as budgets count it; only an
      // `unknown` may have been charged (docs/api.md §7).
      charged:
        outcome.status === 'succeeded'
          ? 'yes'
          : outcome.status === 'unknown' && !outcome.notCharged
            ? 'possibly'
            : 'no',
      requestId: record.requestId,
      costUnits: record.costUnits,
      reservation: record.reservation,
    };
    // Owed until stored (or the record has expired): the caller is answered either way.
    const until = this.owedUntil(record);
    const ttlLeft = () => Math.ceil((until - Date.now()) / 1000);
    const response: StoredResponse = { ...outcome.response, trackId };
    // `failed` was not charged (docs/upstream-api.md §4.4 rule 9): its reservation is released;
    // `unknown` stays spent.
    const budget = reserved ? (outcome.status === 'failed' ? 'release' : 'commit') : undefined;
    const withRecord = this.records.accountsWithRecord;
    // Sent together (one round trip); the record's command goes first. Waiters on any replica
    // are told once the record is written. The ledger's entry and the budget ride the record's
    // command, or follow it (docs/architecture.md, "The ledger").
    await Promise.all([
      // One owed write either way: the record and its ledger entry stored, or retried, together.
      this.settlements.write(
        `record of ${trackId}`,
        async () => {
          await Promise.all([
            this.records.settle(settled, ttlLeft(), withRecord ? budget : undefined),
            withRecord ? undefined : this.ledgerQueue.settled(settled, budget),
          ]);
          await this.waits.announce(trackId);
        },
        until,
      ),
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

/** How early a timer may fire by Date.now(); a wait that ended sooner than this before its time was cut short. */
const EARLY_TIMER_MS = 50;
/** The shortest pause between two claims of a keyed retry: no round runs without waiting. */
const MIN_CLAIM_RETRY_MS = 50;
/** How often a keyed async retry looks again for a settled failure's answer to be stored. */
const UNSTORED_FAILURE_POLL_MS = 500;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A store's rejection as an Error (ioredis and the stores only ever reject with one). */
function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error('The store rejected the write.');
}

/** The answer to an inquiry that arrives once shutdown has begun: nothing was written or sent. */
function refusedAtShutdown(): ProblemException {
  return new ProblemException(
    'upstream_unavailable',
    'This replica is shutting down; nothing was sent upstream. Retry: another replica takes it.',
    { headers: { [RETRY_AFTER_HEADER]: '1' } },
  );
}

function notFound(): ProblemException {
  return new ProblemException('not_found', 'No inquiry with this trackId.');
}

/** The promise's value if it settles within `ms`, else null (at once for 0: `respond-async` alone). */
async function settledWithin<T>(settled: Promise<T>, ms: number): Promise<T | null> {
  if (ms <= 0) return null;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  try {
    return await Promise.race([settled, timeout]);
  } finally {
    clearTimeout(timer);
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
