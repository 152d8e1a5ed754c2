/**
 * What can go wrong on an upstream call, told apart by what it means for the caller:
 * - `rejected`: the upstream answered with its error envelope (§2.2, §7): it decided.
 * - `malformed`: it answered, but not with a readable envelope (or with more than
 *   `UPSTREAM_MAX_RESPONSE_BYTES`: `responseTooLarge`, reading stopped). It may have charged.
 * - `not_sent`: the request never reached it (connection refused, DNS): safe to retry.
 * - `outcome_unknown`: the request was sent but no answer came (timeout, connection
 *   dropped): the upstream may or may not have processed and charged it.
 */
export type UpstreamFailureKind = 'rejected' | 'malformed' | 'not_sent' | 'outcome_unknown';

export interface UpstreamFieldError {
  field: string;
  message: string;
}

export class UpstreamError extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    readonly details: {
      httpStatus?: number;
      code?: number;
      errorType?: string;
      upstreamMessage?: string;
      fieldErrors?: UpstreamFieldError[];
      trackId?: string;
      timedOut?: boolean;
      /** `malformed`: the answer was larger than `UPSTREAM_MAX_RESPONSE_BYTES`; reading stopped. */
      responseTooLarge?: boolean;
      /** Refused by the open circuit breaker: never sent. */
      circuitOpen?: boolean;
    } = {},
  ) {
    // The message carries no request data: it is safe to log.
    super(
      `upstream ${kind}` +
        (details.httpStatus ? ` http=${details.httpStatus}` : '') +
        (details.code !== undefined ? ` code=${details.code}` : '') +
        (details.errorType ? ` type=${details.errorType}` : ''),
    );
    this.name = 'UpstreamError';
  }

  get httpStatus(): number | undefined {
    return this.details.httpStatus;
  }

  /** §7.1: 401 / meta.code 6 means the credentials or token were not accepted. */
  get isUnauthorized(): boolean {
    return this.kind === 'rejected' && this.details.httpStatus === 401;
  }
}
