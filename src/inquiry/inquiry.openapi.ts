import { applyDecorators, type Type } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiSecurity,
  ApiTags,
} from '@nestjs/swagger';
import type { Scope } from '../config/app-config.js';
import { API_KEY_SCHEME, JWT_SCHEME, responseHeader } from '../openapi.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { InquiryAcceptedDto, InquiryRecordDto, InquiryResultDto } from './dto/inquiry-result.dto.js';

/** Either credential; the JWT's scope is listed OAuth2-style, the API key's in the description. */
function ApiScope(scope: Scope): MethodDecorator {
  return applyDecorators(ApiSecurity(API_KEY_SCHEME), ApiSecurity(JWT_SCHEME, [scope]));
}

/** The Idempotency-Key rules of validateIdempotencyKey (docs/api.md §2, Idempotency). */
const IDEMPOTENCY_KEY = ApiHeader({
  name: 'Idempotency-Key',
  required: false,
  description:
    '1–255 visible ASCII characters (0x21–0x7E), sent once. A retry with the same key and body (same caller) gets ' +
    'the stored answer with `Idempotent-Replayed: true` and is not charged again; kept for ' +
    '`IDEMPOTENCY_TTL_SECONDS` (24 h by default). A bad key is a 400 `validation_failed` on `Idempotency-Key`.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]{1,255}$' },
});

/** RFC 7240 `Prefer` on an inquiry (docs/api.md §2, "Asynchronous answers"). */
const PREFER_ASYNC = ApiHeader({
  name: 'Prefer',
  required: false,
  description:
    '`respond-async, wait=<seconds>` (0–60; `respond-async` alone means 0): if the inquiry has not settled within ' +
    'the wait, the answer is 202 with `Location`, and the inquiry goes on and settles its record as a synchronous ' +
    'one would. Within the wait, the answer is exactly the synchronous one. With an `Idempotency-Key`, a retry ' +
    'while the first is in flight gets the same 202 instead of 409. Other preferences are ignored.',
  schema: { type: 'string', example: 'respond-async, wait=5' },
});

/** RFC 9111 `Cache-Control` on an inquiry (docs/api.md §2, "Reusing answers"). */
const CACHE_CONTROL = ApiHeader({
  name: 'Cache-Control',
  required: false,
  description:
    'Reuse of an answer already paid for, where the operator allows it for the operation (`INQUIRY_REUSE`). ' +
    '`max-age=<seconds>`: an answer at most that old (and never older than the operator allows) may be reused, ' +
    'and an identical inquiry in flight is joined (`max-age=0` only joins). `stale-if-error=<seconds>`: an ' +
    'answer up to that much older is served instead of a 502, 503 `upstream_unavailable` or 504. `no-cache`: a ' +
    'fresh inquiry; `no-store`: the fresh answer is not kept; `only-if-cached`: 504 `not_cached` when nothing is ' +
    'reusable. A `max-age` or `stale-if-error` that is not a whole number of seconds is a 400 on `Cache-Control`.',
  schema: { type: 'string', example: 'max-age=600' },
});

/** RFC 7240 `Prefer: wait` on a read: a long-poll. */
const PREFER_WAIT = ApiHeader({
  name: 'Prefer',
  required: false,
  description:
    '`wait=<seconds>` (0–60): a `pending` record is held until it settles (on any replica) or the wait ends; ' +
    'the answer then says `Preference-Applied: wait=<seconds>`. 429 when this replica already holds its maximum ' +
    'of waiting requests.',
  schema: { type: 'string', example: 'wait=30' },
});

/** Headers of an inquiry's answers that can be a replay (stored outcomes: not the refusals before the call). */
const replayable = {
  'X-Track-Id': responseHeader('X-Track-Id'),
  'Idempotent-Replayed': responseHeader('Idempotent-Replayed'),
};

/**
 * `POST /v1/kyc/*`: everything the inquiry operations share in the document. Without `body`, the
 * added operations' template (added-operations.openapi.ts writes each one's body).
 */
export function ApiInquiry(options: { summary: string; scope: Scope; body?: Type<unknown> }): MethodDecorator {
  return applyDecorators(
    ApiTags('inquiries'),
    ApiOperation({
      summary: options.summary,
      description:
        `Needs the scope \`${options.scope}\` (and \`kyc:advanced\` for \`requestHandlingType: advanced\`). ` +
        'The input is checked before anything is spent; the gateway stamps the trackId, records the inquiry, ' +
        'calls the upstream service and answers with its data. Every answer after the trackId was stamped carries ' +
        '`X-Track-Id`.',
    }),
    ApiScope(options.scope),
    ...(options.body ? [ApiBody({ type: options.body, required: true })] : []),
    IDEMPOTENCY_KEY,
    PREFER_ASYNC,
    CACHE_CONTROL,
    ApiAcceptedResponse({
      type: InquiryAcceptedDto,
      description:
        '`Prefer: respond-async` and not settled within the wait: the inquiry is recorded and goes on; read the ' +
        'result at `Location`. `Retry-After` is the gateway’s estimate of when it will be ready.',
      headers: {
        'X-Track-Id': responseHeader('X-Track-Id', true),
        Location: responseHeader('Location', true),
        'Preference-Applied': responseHeader('Preference-Applied', true),
        'Retry-After': responseHeader('Retry-After', true),
      },
    }),
    ApiOkResponse({
      type: InquiryResultDto,
      description:
        'The upstream service answered; `data` is its answer. A reused answer (the caller sent `Cache-Control`) has ' +
        'its own trackId, `reusedFrom`, `Age` and `Cache-Status`.',
      headers: {
        'X-Track-Id': responseHeader('X-Track-Id', true),
        'Idempotent-Replayed': responseHeader('Idempotent-Replayed'),
        Age: responseHeader('Age'),
        'Cache-Status': responseHeader('Cache-Status'),
      },
    }),
    ApiProblemResponses(
      [
        'validation_failed',
        'unauthenticated',
        'forbidden',
        'idempotency_key_in_use',
        'payload_too_large',
        'idempotency_key_reused',
        'upstream_rejected',
        'rate_limited',
        'budget_exhausted',
        'internal',
        'upstream_error',
        'upstream_unavailable',
        'auth_unavailable',
        'store_unavailable',
        'upstream_timeout',
        'not_cached',
      ],
      {
        409: { 'X-Track-Id': responseHeader('X-Track-Id') },
        422: replayable,
        429: { 'Retry-After': responseHeader('Retry-After', true) },
        500: replayable,
        502: replayable,
        503: { 'X-Track-Id': responseHeader('X-Track-Id'), 'Retry-After': responseHeader('Retry-After') },
        504: replayable,
      },
    ),
  );
}

/** `GET /v1/inquiries/{trackId}`. */
export function ApiInquiryRecord(): MethodDecorator {
  return applyDecorators(
    ApiTags('inquiries'),
    ApiOperation({
      summary: 'The recorded state of one of your inquiries',
      description:
        'Needs the scope `inquiries:read`. Only the client that made the inquiry (and, for an app, only its end ' +
        'user) sees it; anyone else gets 404, as for a trackId that never existed or has expired. A trackId that ' +
        'is not a UUID is a 400.',
    }),
    ApiScope('inquiries:read'),
    ApiParam({
      name: 'trackId',
      description:
        'The trackId of an earlier inquiry: a UUID (anything else is a 400 `validation_failed` on `trackId`; a ' +
        'well-formed one that is not yours, or has expired, is a 404).',
      schema: { type: 'string', format: 'uuid' },
    }),
    PREFER_WAIT,
    ApiOkResponse({
      type: InquiryRecordDto,
      description:
        'The inquiry as recorded. A record still `pending` after its upstream call can no longer be running reads ' +
        '`unknown`.',
      headers: {
        'X-Track-Id': responseHeader('X-Track-Id', true),
        'Preference-Applied': responseHeader('Preference-Applied'),
      },
    }),
    ApiProblemResponses(
      [
        'validation_failed',
        'unauthenticated',
        'forbidden',
        'not_found',
        'rate_limited',
        'internal',
        'auth_unavailable',
        'store_unavailable',
      ],
      {
        429: { 'Retry-After': responseHeader('Retry-After', true) },
        503: { 'Retry-After': responseHeader('Retry-After') },
      },
    ),
  );
}
