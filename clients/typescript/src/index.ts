/**
 * A typed client for the verification gateway (docs/api.md), over `openapi-fetch` with the
 * types `openapi-typescript` generates from docs/openapi.json (src/schema.ts: regenerate with
 * `npm run client:generate` in the repository root; never edit it by hand).
 *
 * Every call resolves with a `Result`: the answer's data, or its problem+json as a typed value
 * (`problem.code` is the stable code to branch on). It rejects only when no HTTP answer came
 * (network failure, abort; after the retries, when asked for) or the answer is not the
 * gateway's (not problem+json, e.g. from a proxy in between): `UnexpectedResponseError`.
 *
 * Safe by construction: every inquiry carries an `Idempotency-Key` (the caller's, or a fresh
 * one), every result says which, and the opt-in retries resend only with that same key, so no
 * retry can be charged twice.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';
export type Problem = components['schemas']['Problem'];
export type ProblemCode = components['schemas']['ProblemCode'];
export type ShahkarRequest = components['schemas']['ShahkarRequest'];
export type IbanRequest = components['schemas']['IbanRequest'];
export type InquiryResult = components['schemas']['InquiryResult'];
export type InquiryAccepted = components['schemas']['InquiryAccepted'];
export type InquiryRecord = components['schemas']['InquiryRecord'];
/** `GET /v1/budget`: the caller's own spend budgets (docs/api.md §6). */
export type ClientBudgets = components['schemas']['ClientBudgets'];
/** The built-in operations, each with a typed method of its own. */
export type Operation = 'shahkar' | 'iban';

/**
 * The body of an inquiry of an operation the deployment's operator added (docs/api.md, "Operations
 * the operator adds"): its fields, as strings, and `requestHandlingType`. Type it exactly with the
 * deployment's own `/docs-json` (README, "Operations your deployment adds"), e.g.
 * `OperationFields<paths, 'card-to-iban'>`.
 */
export type InquiryFields = { [field: string]: string | undefined } & {
  requestHandlingType?: 'standard' | 'advanced';
};

/**
 * The request body of `POST /v1/kyc/{name}` in an app's own `paths` (openapi-typescript's output
 * for a deployment's `/docs-json`): `OperationFields<paths, 'card-to-iban'>`.
 */
export type OperationFields<P, Name extends string> = P extends {
  [path in `/v1/kyc/${Name}`]: { post: { requestBody?: { content: { 'application/json': infer Body } } } };
}
  ? Body
  : never;

/** An operation's name (docs/api.md, "Operations the operator adds"): its route is /v1/kyc/{name}. */
const OPERATION_NAME = /^[a-z][a-z0-9-]{1,39}$/;

/** The facts every answer carries. */
interface AnswerFacts {
  status: number;
  /** `X-Track-Id`: the inquiry's trackId (the billing reference), once the gateway stamped one. */
  trackId?: string;
  /** The `Idempotency-Key` the inquiry was sent with (yours, or the one generated for it): retry with it. */
  idempotencyKey?: string;
  requestId?: string;
  /** How many HTTP requests the call took (retries and long-polls included). */
  attempts: number;
  /** `Idempotent-Replayed: true`: the stored answer to an earlier request with the same key. */
  replayed: boolean;
  /** `Cache-Status`, when reuse was asked for (`maxAgeSeconds`): e.g. `verification-gateway; hit`. */
  cacheStatus?: string;
  /** `Age`: whole seconds since a reused answer completed (only on a reused answer). */
  ageSeconds?: number;
}

/** What a call gives back: the data with the facts of its answer, or the problem. */
export type Result<T> =
  | (AnswerFacts & {
      ok: true;
      data: T;
    })
  | (AnswerFacts & {
      ok: false;
      problem: Problem;
      /** `Retry-After` in seconds (429, 503), when the gateway says when to try again. */
      retryAfterSeconds?: number;
    });

export interface ClientOptions {
  /** e.g. `http://verification-gateway.kyc.svc.cluster.local` */
  baseUrl: string;
  /** A service's API key (`X-Api-Key`). */
  apiKey?: string;
  /** An app's end-user JWT, asked for before each call (`Authorization: Bearer`). */
  accessToken?: () => string | Promise<string>;
  /** Another fetch (tests, instrumentation). */
  fetch?: typeof fetch;
  /** Retries for every inquiry of this client (default: none); a call's own `retry` wins. */
  retry?: RetryPolicy | boolean;
}

/**
 * Automatic retries, opt-in, only of what the contract calls retryable: 409
 * `idempotency_key_in_use`, 429, 502/503/504 unless the answer is a replay (a stored 502/504 is
 * final), and a network error before an answer. Always with the same Idempotency-Key, after
 * `Retry-After` when given, else a jittered exponential backoff, and never past the deadline.
 */
export interface RetryPolicy {
  /** Requests at most, the first included (default 5). */
  maxAttempts?: number;
  /** No retry is started after this many ms from the call (default 30 000). */
  deadlineMs?: number;
  /** First backoff (default 200 ms), doubled per attempt, capped at `maxDelayMs` (default 5 000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

export interface CallOptions {
  /** `X-Request-Id`, to find the request in the gateway's logs. */
  requestId?: string;
  signal?: AbortSignal;
}

export interface InquiryOptions extends CallOptions {
  /**
   * `Idempotency-Key`. Omitted or `true`: a fresh key (crypto.randomUUID) is made. Either way the
   * result's `idempotencyKey` says which was used; pass it again to retry by hand.
   */
  idempotencyKey?: string | true;
  /** Retries for this call (see RetryPolicy); `true` for the defaults. */
  retry?: RetryPolicy | boolean;
  /**
   * `Cache-Control: max-age=<n>`: an answer the gateway already paid for, at most this many
   * seconds old, may be reused (where its operator allows it), and an identical inquiry in flight
   * is joined (0 only joins). A reused answer has `data.reusedFrom`, `ageSeconds`, `cacheStatus`.
   */
  maxAgeSeconds?: number;
}

export interface AsyncOptions {
  /** `Prefer: wait` on the inquiry: answer synchronously if it settles this soon (default 0, at most 60). */
  waitSeconds?: number;
  /** Each long-poll's `Prefer: wait` (default 30, at most 60). */
  pollSeconds?: number;
  /** Give up waiting for the result after this many ms (default 300 000): the result is then `pending`. */
  deadlineMs?: number;
}

export interface WaitOptions extends CallOptions, Omit<AsyncOptions, 'waitSeconds'> {}

/** An answer that is neither the documented data nor a problem+json (a proxy's error page, …). */
export class UnexpectedResponseError extends Error {
  constructor(
    readonly status: number,
    readonly contentType: string | null,
  ) {
    super(`unexpected answer from the verification gateway: HTTP ${status} (${contentType ?? 'no content type'})`);
    this.name = 'UnexpectedResponseError';
  }
}

const NO_RETRY: Required<RetryPolicy> = { maxAttempts: 1, deadlineMs: 0, baseDelayMs: 0, maxDelayMs: 0 };
const DEFAULT_RETRY: Required<RetryPolicy> = {
  maxAttempts: 5,
  deadlineMs: 30_000,
  baseDelayMs: 200,
  maxDelayMs: 5_000,
};

export class VerificationGatewayClient {
  private readonly http: ReturnType<typeof createClient<paths>>;

  constructor(private readonly options: ClientOptions) {
    this.http = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: options.fetch });
  }

  /** `POST /v1/kyc/shahkar`: does this national code own this mobile number? */
  shahkar(body: ShahkarRequest, options: InquiryOptions = {}): Promise<Result<InquiryResult>> {
    return this.inquire('shahkar', body, options);
  }

  /** `POST /v1/kyc/iban`: the owner and bank of an IBAN. */
  iban(body: IbanRequest, options: InquiryOptions = {}): Promise<Result<InquiryResult>> {
    return this.inquire('iban', body, options);
  }

  /**
   * One inquiry. With `async`, it is sent with `Prefer: respond-async`: a 202 is followed by
   * long-polls of its record (`waitForResult`), and the call resolves with the settled record
   * (`status`: succeeded, failed or unknown; still `pending` only if `deadlineMs` ran out). Each
   * long-poll holds one request open, so a dropped connection costs a poll, not the inquiry.
   */
  inquire(
    operation: 'shahkar',
    body: ShahkarRequest,
    options: InquiryOptions & { async: true | AsyncOptions },
  ): Promise<Result<InquiryRecord>>;
  inquire(
    operation: 'iban',
    body: IbanRequest,
    options: InquiryOptions & { async: true | AsyncOptions },
  ): Promise<Result<InquiryRecord>>;
  inquire(operation: 'shahkar', body: ShahkarRequest, options?: InquiryOptions): Promise<Result<InquiryResult>>;
  inquire(operation: 'iban', body: IbanRequest, options?: InquiryOptions): Promise<Result<InquiryResult>>;
  /**
   * An operation the deployment's operator added, by its name (`card-to-iban`: `POST
   * /v1/kyc/card-to-iban`), with the same keys, retries and asynchronous answers. A name that
   * cannot be an operation's rejects with a TypeError before anything is sent; one the
   * deployment does not have is a 404 `not_found`.
   */
  inquire<Name extends string>(
    operation: Name & (Name extends Operation ? never : unknown),
    fields: InquiryFields,
    options: InquiryOptions & { async: true | AsyncOptions },
  ): Promise<Result<InquiryRecord>>;
  inquire<Name extends string>(
    operation: Name & (Name extends Operation ? never : unknown),
    fields: InquiryFields,
    options?: InquiryOptions,
  ): Promise<Result<InquiryResult>>;
  async inquire(
    operation: string,
    body: ShahkarRequest | IbanRequest | InquiryFields,
    options: InquiryOptions & { async?: true | AsyncOptions } = {},
  ): Promise<Result<InquiryResult> | Result<InquiryRecord>> {
    // The name becomes a path: nothing but a name of the contract's shape may (no `..`, no `/`).
    if (!OPERATION_NAME.test(operation)) throw new TypeError(`not an operation's name: ${JSON.stringify(operation)}`);
    const idempotencyKey =
      typeof options.idempotencyKey === 'string' ? options.idempotencyKey : globalThis.crypto.randomUUID();
    const asyncOptions = options.async === true ? {} : options.async;
    const prefer = asyncOptions
      ? `respond-async, wait=${Math.min(60, Math.max(0, Math.floor(asyncOptions.waitSeconds ?? 0)))}`
      : undefined;
    const cacheControl =
      options.maxAgeSeconds === undefined ? undefined : `max-age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`;
    const started = Date.now();
    const answer = await this.withRetries(policyOf(options.retry ?? this.options.retry), options.signal, async () => {
      const headers = await this.headers(options, {
        'Idempotency-Key': idempotencyKey,
        Prefer: prefer,
        'Cache-Control': cacheControl,
      });
      // openapi-fetch types the body per path; the overloads above keep body and operation paired.
      const post = this.http.POST as (
        path: string,
        init: { body: unknown; headers: Record<string, string>; signal?: AbortSignal },
      ) => Promise<{ data?: InquiryResult | InquiryAccepted; error?: unknown; response: Response }>;
      return settle(await post(`/v1/kyc/${operation}`, { body, headers, signal: options.signal }));
    });
    const result = { ...answer, idempotencyKey };
    if (!asyncOptions || !result.ok || !result.trackId) return result as Result<InquiryResult>;
    // Settled within the wait (200), or accepted (202): either way the record is the answer.
    const remaining = (asyncOptions.deadlineMs ?? 300_000) - (Date.now() - started);
    const record = await this.waitForResult(result.trackId, {
      ...options,
      pollSeconds: asyncOptions.pollSeconds,
      deadlineMs: Math.max(0, remaining),
    });
    return { ...record, idempotencyKey, attempts: record.attempts + result.attempts };
  }

  /** `GET /v1/inquiries/{trackId}`: the recorded state of one of your inquiries. */
  async inquiry(trackId: string, options: CallOptions & { waitSeconds?: number } = {}): Promise<Result<InquiryRecord>> {
    const prefer = options.waitSeconds ? `wait=${Math.min(60, Math.floor(options.waitSeconds))}` : undefined;
    const headers = await this.headers(options, { Prefer: prefer });
    return settle(
      await this.http.GET('/v1/inquiries/{trackId}', {
        params: { path: { trackId } },
        headers,
        signal: options.signal,
      }),
    );
  }

  /** `GET /v1/budget`: your spend budgets, each window's limit, spent, reserved and remaining units. */
  async budget(options: CallOptions = {}): Promise<Result<ClientBudgets>> {
    const headers = await this.headers(options);
    return settle(await this.http.GET('/v1/budget', { headers, signal: options.signal }));
  }

  /**
   * Long-polls the record until it leaves `pending` (woken by its settlement on any replica),
   * or `deadlineMs` ends (then the last, still pending, record). A refusal to hold the poll
   * (429), a store outage (503) or a network error is retried after `Retry-After` or a backoff.
   */
  async waitForResult(trackId: string, options: WaitOptions = {}): Promise<Result<InquiryRecord>> {
    const deadline = Date.now() + (options.deadlineMs ?? 300_000);
    const pollSeconds = Math.min(60, Math.max(1, options.pollSeconds ?? 30));
    let attempts = 0;
    for (;;) {
      const leftSeconds = Math.floor((deadline - Date.now()) / 1000);
      const policy = { ...DEFAULT_RETRY, deadlineMs: Math.max(0, deadline - Date.now()) };
      const record = await this.withRetries(policy, options.signal, () =>
        this.inquiry(trackId, { ...options, waitSeconds: Math.max(0, Math.min(pollSeconds, leftSeconds)) }),
      );
      attempts += record.attempts;
      if (!record.ok || record.data.status !== 'pending' || leftSeconds <= 0) return { ...record, attempts };
    }
  }

  /** Runs `send` until its answer is final, the attempts are spent or the deadline is near. */
  private async withRetries<T>(
    policy: Required<RetryPolicy>,
    signal: AbortSignal | undefined,
    send: () => Promise<Result<T>>,
  ): Promise<Result<T>> {
    const deadline = Date.now() + policy.deadlineMs;
    for (let attempt = 1; ; attempt++) {
      let outcome: { result: Result<T> } | { error: unknown };
      try {
        outcome = { result: await send() };
      } catch (error) {
        // Only a network failure is retryable: no answer came, and the key makes a resend safe.
        if (error instanceof UnexpectedResponseError || signal?.aborted) throw error;
        outcome = { error };
      }
      const retryAfterMs =
        'result' in outcome && !outcome.result.ok && outcome.result.retryAfterSeconds !== undefined
          ? outcome.result.retryAfterSeconds * 1000
          : undefined;
      const delay = retryAfterMs ?? backoff(policy, attempt);
      const retryable = 'error' in outcome || isRetryable(outcome.result);
      if (!retryable || attempt >= policy.maxAttempts || Date.now() + delay > deadline) {
        if ('error' in outcome) throw outcome.error;
        return { ...outcome.result, attempts: attempt };
      }
      await sleep(delay, signal);
    }
  }

  private async headers(
    options: CallOptions,
    extra: Record<string, string | undefined> = {},
  ): Promise<Record<string, string>> {
    const headers: Record<string, string> = {};
    if (this.options.apiKey) headers['X-Api-Key'] = this.options.apiKey;
    if (this.options.accessToken) headers.Authorization = `Bearer ${await this.options.accessToken()}`;
    if (options.requestId) headers['X-Request-Id'] = options.requestId;
    for (const [name, value] of Object.entries(extra)) if (value !== undefined) headers[name] = value;
    return headers;
  }
}

function policyOf(retry: RetryPolicy | boolean | undefined): Required<RetryPolicy> {
  if (!retry) return NO_RETRY;
  return { ...DEFAULT_RETRY, ...(retry === true ? {} : retry) };
}

/** What the contract lets a client retry with the same key (docs/api.md, "Retrying safely"). */
function isRetryable(result: Result<unknown>): boolean {
  if (result.ok) return false;
  switch (result.status) {
    case 409:
      return result.problem.code === 'idempotency_key_in_use';
    case 429:
      // A spent budget comes back when its window resets (`Retry-After`), never sooner: without
      // the header it is not retried, and with it the wait is the header's, not a backoff.
      return result.problem.code !== 'budget_exhausted' || result.retryAfterSeconds !== undefined;
    case 503:
      return true;
    case 502:
    case 504:
      // A replayed 502/504 is the stored outcome of this key: asking again gives it again.
      return !result.replayed;
    default:
      return false;
  }
}

/** Full jitter: a random delay up to the capped exponential step. */
function backoff(policy: Required<RetryPolicy>, attempt: number): number {
  return Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

/** One answer as a `Result`; anything that is not the gateway's is thrown. */
function settle<T>(answer: { data?: T; error?: unknown; response: Response }): Result<T> {
  const { response } = answer;
  const facts = {
    status: response.status,
    trackId: response.headers.get('x-track-id') ?? undefined,
    requestId: response.headers.get('x-request-id') ?? undefined,
    attempts: 1,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    ...(response.headers.has('cache-status') ? { cacheStatus: response.headers.get('cache-status')! } : {}),
    ...(response.headers.has('age') ? { ageSeconds: Number(response.headers.get('age')) } : {}),
  };
  if (response.ok && answer.data !== undefined) return { ok: true, ...facts, data: answer.data };
  const contentType = response.headers.get('content-type');
  if (!response.ok && contentType?.startsWith('application/problem+json') && isProblem(answer.error)) {
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
    return {
      ok: false,
      ...facts,
      problem: answer.error,
      ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
    };
  }
  throw new UnexpectedResponseError(response.status, contentType);
}

function isProblem(value: unknown): value is Problem {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { status?: unknown }).status === 'number' &&
    typeof (value as { code?: unknown }).code === 'string'
  );
}
