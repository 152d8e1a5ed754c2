/**
 * HTTP header names of the gateway's contract (docs/api.md), in one place. Fastify matches
 * header names case-insensitively on the way out; incoming headers arrive lower-cased, so the
 * `*_IN` names are the ones to read from `request.headers`.
 */

/** The trackId the gateway stamped (docs/api.md §2), on every inquiry answer once stamped. */
export const TRACK_ID_HEADER = 'X-Track-Id';
/** Present, `true`, on an answer replayed for a repeated Idempotency-Key. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** Seconds to wait before retrying: 429, and 503 where a wait helps. */
export const RETRY_AFTER_HEADER = 'Retry-After';
/** The authentication schemes a 401 accepts (RFC 9110 §11.6.1), on every 401. */
export const WWW_AUTHENTICATE_HEADER = 'WWW-Authenticate';
/** The request's id, on every answer (docs/api.md §3): the caller's when well formed, else fresh. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** A caller's retry key for an inquiry (docs/api.md §2, Idempotency). */
export const IDEMPOTENCY_KEY_HEADER_IN = 'idempotency-key';
/** A service's API key (docs/api.md §1). */
export const API_KEY_HEADER_IN = 'x-api-key';
/** A request id accepted from the caller when well-formed, echoed on every answer. */
export const REQUEST_ID_HEADER_IN = 'x-request-id';

/** Where the result of a 202 Accepted inquiry is read (`/v1/inquiries/{trackId}`). */
export const LOCATION_HEADER = 'Location';
/** RFC 7240: which of the caller's `Prefer` preferences the answer honoured. */
export const PREFERENCE_APPLIED_HEADER = 'Preference-Applied';
/** RFC 7240 preferences: `respond-async`, `wait=<seconds>` (docs/api.md, "Asynchronous answers"). */
export const PREFER_HEADER_IN = 'prefer';

/** RFC 9111 request directives: a caller's consent to a reused answer (docs/api.md §2, "Reusing answers"). */
export const CACHE_CONTROL_HEADER = 'Cache-Control';
export const CACHE_CONTROL_HEADER_IN = 'cache-control';
/** RFC 9111 §5.1: whole seconds since a reused answer completed (only on reused answers). */
export const AGE_HEADER = 'Age';
/** RFC 9211: how the gateway's answer store handled the request (docs/api.md §2, "Reusing answers"). */
export const CACHE_STATUS_HEADER = 'Cache-Status';
