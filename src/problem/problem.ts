import { knownSecrets } from '../config/known-secrets.js';

/**
 * RFC 9457 problem details, with the stable `code`s of docs/api.md §3.
 * Every error the gateway returns is built from a `ProblemException`, so callers can rely
 * on `code` and never see a stack trace, a secret or a raw personal identifier.
 */

export const PROBLEM_STATUS = {
  validation_failed: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  /** A known path with another method (RFC 9110 §15.5.6): the answer's `Allow` names the methods it serves. */
  method_not_allowed: 405,
  /** Not in the contract's table: the request (headers and body) did not arrive within HTTP_REQUEST_TIMEOUT_MS. */
  request_timeout: 408,
  idempotency_key_in_use: 409,
  /** Not in the contract's table: a reconciliation confirmed against a dry run's report that the ledger no longer gives. */
  reconciliation_changed: 409,
  /** Administration: another decision on this parked ledger entry came first (docs/api.md §7). */
  parked_entry_handled: 409,
  payload_too_large: 413,
  /** Not in the contract's table: request headers over Node's limit (16 KiB). */
  headers_too_large: 431,
  idempotency_key_reused: 422,
  upstream_rejected: 422,
  /** Administration: a re-driven parked entry refused by the database again; it stays parked. */
  parked_entry_refused: 422,
  rate_limited: 429,
  budget_exhausted: 429,
  upstream_error: 502,
  upstream_unavailable: 503,
  store_unavailable: 503,
  /** Not in the contract's table: a JWT cannot be checked now (identity provider unreachable, no usable keys). */
  auth_unavailable: 503,
  upstream_timeout: 504,
  /** `Cache-Control: only-if-cached` with nothing reusable (docs/api.md §2, "Reusing answers"): nothing sent, nothing recorded. */
  not_cached: 504,
  internal: 500,
} as const;

export type ProblemCode = keyof typeof PROBLEM_STATUS;

const TITLES: Record<ProblemCode, string> = {
  validation_failed: 'The request is not valid',
  unauthenticated: 'Authentication required',
  forbidden: 'Not allowed',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  request_timeout: 'Request timeout',
  idempotency_key_in_use: 'Idempotency key in use',
  reconciliation_changed: 'The reconciliation would change something else now',
  parked_entry_handled: 'Parked entry already handled',
  payload_too_large: 'Payload too large',
  headers_too_large: 'Request headers too large',
  idempotency_key_reused: 'Idempotency key reused',
  upstream_rejected: 'Rejected by the verification service',
  parked_entry_refused: 'Parked entry refused again',
  rate_limited: 'Too many requests',
  budget_exhausted: 'Budget exhausted',
  upstream_error: 'Verification service error',
  upstream_unavailable: 'Verification service unavailable',
  store_unavailable: 'Record store unavailable',
  auth_unavailable: 'Authentication temporarily unavailable',
  upstream_timeout: 'Verification service timed out',
  not_cached: 'No reusable answer',
  internal: 'Internal error',
};

export const PROBLEM_TYPE_BASE = 'https://verification-gateway.internal/problems/';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface FieldError {
  field: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  trackId?: string;
  errors?: FieldError[];
}

export interface ProblemOptions {
  errors?: FieldError[];
  trackId?: string;
  /** Extra response headers, e.g. `Retry-After`. */
  headers?: Record<string, string>;
}

export class ProblemException extends Error {
  readonly status: number;
  readonly errors?: FieldError[];
  trackId?: string;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ProblemCode,
    readonly detail: string,
    options: ProblemOptions = {},
  ) {
    super(`${code}: ${detail}`);
    this.name = 'ProblemException';
    this.status = PROBLEM_STATUS[code];
    this.errors = options.errors;
    this.trackId = options.trackId;
    this.headers = options.headers ?? {};
  }

  static validation(errors: FieldError[], detail = 'The request has invalid fields.'): ProblemException {
    return new ProblemException('validation_failed', detail, { errors });
  }

  toBody(): ProblemBody {
    const body: ProblemBody = {
      type: PROBLEM_TYPE_BASE + this.code,
      title: TITLES[this.code],
      status: this.status,
      code: this.code,
      // A detail may carry the upstream's own words, which may echo a secret it was sent.
      detail: knownSecrets.scrub(this.detail),
    };
    if (this.trackId) body.trackId = this.trackId;
    const errors = this.errors?.map((e) => ({ field: e.field, message: knownSecrets.scrub(e.message) }));
    if (this.code === 'validation_failed') body.errors = errors ?? [];
    else if (errors?.length) body.errors = errors;
    return body;
  }
}
