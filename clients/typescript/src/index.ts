/**
 * A typed client for the verification gateway (docs/api.md), over `openapi-fetch` with the
 * types `openapi-typescript` generates from docs/openapi.json (src/schema.ts: regenerate with
 * `npm run client:generate` in the repository root; never edit it by hand).
 *
 * Every call resolves with a `Result`: the answer's data, or its problem+json as a typed value
 * (`problem.code` is the stable code to branch on). It rejects only when no HTTP answer came
 * (network failure, abort) or the answer is not the gateway's (not problem+json, e.g. from a
 * proxy in between): `UnexpectedResponseError`.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, paths } from './schema.js';
export type Problem = components['schemas']['Problem'];
export type ProblemCode = components['schemas']['ProblemCode'];
export type ShahkarRequest = components['schemas']['ShahkarRequest'];
export type IbanRequest = components['schemas']['IbanRequest'];
export type InquiryResult = components['schemas']['InquiryResult'];
export type InquiryRecord = components['schemas']['InquiryRecord'];

/** What a call gives back: the data with the facts of its answer, or the problem. */
export type Result<T> =
  | {
      ok: true;
      status: number;
      data: T;
      /** `X-Track-Id`: the inquiry's trackId (the billing reference). */
      trackId?: string;
      /** `Idempotent-Replayed: true`: the stored answer to an earlier request with the same Idempotency-Key. */
      replayed: boolean;
      requestId?: string;
    }
  | {
      ok: false;
      status: number;
      problem: Problem;
      /** `Retry-After` in seconds (429, 503), when the gateway says when to try again. */
      retryAfterSeconds?: number;
      requestId?: string;
    };

export interface ClientOptions {
  /** e.g. `http://verification-gateway.kyc.svc.cluster.local` */
  baseUrl: string;
  /** A service's API key (`X-Api-Key`). */
  apiKey?: string;
  /** An app's end-user JWT, asked for before each call (`Authorization: Bearer`). */
  accessToken?: () => string | Promise<string>;
  /** Another fetch (tests, instrumentation). */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /**
   * `Idempotency-Key`: a retry with the same key and body is answered from the first request's
   * outcome and never charged twice. `true` makes a fresh key (crypto.randomUUID); keep it and
   * pass the same string to retry.
   */
  idempotencyKey?: string | true;
  /** `X-Request-Id`, to find the request in the gateway's logs. */
  requestId?: string;
  signal?: AbortSignal;
}

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

export class VerificationGatewayClient {
  private readonly http: ReturnType<typeof createClient<paths>>;

  constructor(private readonly options: ClientOptions) {
    this.http = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: options.fetch });
  }

  /** `POST /v1/kyc/shahkar`: does this national code own this mobile number? */
  async shahkar(body: ShahkarRequest, options: CallOptions = {}): Promise<Result<InquiryResult>> {
    const headers = await this.headers(options);
    return settle(await this.http.POST('/v1/kyc/shahkar', { body, headers, signal: options.signal }));
  }

  /** `POST /v1/kyc/iban`: the owner and bank of an IBAN. */
  async iban(body: IbanRequest, options: CallOptions = {}): Promise<Result<InquiryResult>> {
    const headers = await this.headers(options);
    return settle(await this.http.POST('/v1/kyc/iban', { body, headers, signal: options.signal }));
  }

  /** `GET /v1/inquiries/{trackId}`: the recorded state of one of your inquiries. */
  async inquiry(trackId: string, options: Omit<CallOptions, 'idempotencyKey'> = {}): Promise<Result<InquiryRecord>> {
    const headers = await this.headers(options);
    return settle(
      await this.http.GET('/v1/inquiries/{trackId}', {
        params: { path: { trackId } },
        headers,
        signal: options.signal,
      }),
    );
  }

  private async headers(options: CallOptions): Promise<Record<string, string>> {
    const headers: Record<string, string> = {};
    if (this.options.apiKey) headers['X-Api-Key'] = this.options.apiKey;
    if (this.options.accessToken) headers.Authorization = `Bearer ${await this.options.accessToken()}`;
    if (options.idempotencyKey !== undefined) {
      headers['Idempotency-Key'] = options.idempotencyKey === true ? crypto.randomUUID() : options.idempotencyKey;
    }
    if (options.requestId) headers['X-Request-Id'] = options.requestId;
    return headers;
  }
}

/** One answer as a `Result`; anything that is not the gateway's is thrown. */
function settle<T>(answer: { data?: T; error?: unknown; response: Response }): Result<T> {
  const { response } = answer;
  const requestId = response.headers.get('x-request-id') ?? undefined;
  if (response.ok && answer.data !== undefined) {
    return {
      ok: true,
      status: response.status,
      data: answer.data,
      trackId: response.headers.get('x-track-id') ?? undefined,
      replayed: response.headers.get('idempotent-replayed') === 'true',
      requestId,
    };
  }
  const contentType = response.headers.get('content-type');
  if (!response.ok && contentType?.startsWith('application/problem+json') && isProblem(answer.error)) {
    const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
    return {
      ok: false,
      status: response.status,
      problem: answer.error,
      ...(Number.isFinite(retryAfter) ? { retryAfterSeconds: retryAfter } : {}),
      requestId,
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
