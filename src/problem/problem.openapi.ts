import { applyDecorators } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiResponse,
  getSchemaPath,
  type HeaderObject,
  type ReferenceObject,
  type ResponseObject,
} from '@nestjs/swagger';

import { PROBLEM_CONTENT_TYPE, PROBLEM_STATUS, type ProblemCode } from './problem.js';
import { problemExample } from './problem.examples.js';
import { ProblemSchema } from './problem.schema.js';

/** When each code is answered: the error table of docs/api.md §3. */
const WHEN: Record<ProblemCode, string> = {
  validation_failed:
    '`validation_failed`: body not JSON or not sent as `Content-Type: application/json` (the problem names ' +
    'Content-Type), unknown or missing field, bad national code, mobile, IBAN, ' +
    '`requestHandlingType` or `Idempotency-Key`, a trackId that is not a UUID (one `errors` entry per bad field)',
  unauthenticated: '`unauthenticated`: no or bad credential',
  forbidden: '`forbidden`: the credential lacks the scope (`kyc:advanced` for `advanced`)',
  not_found: '`not_found`: trackId unknown to this caller',
  method_not_allowed: '`method_not_allowed`: a known path with another method; `Allow` names the methods it serves',
  request_timeout: '`request_timeout`: the request (headers and body) did not arrive within `HTTP_REQUEST_TIMEOUT_MS`',
  headers_too_large: '`headers_too_large`: the request headers are larger than the server accepts',
  idempotency_key_in_use: '`idempotency_key_in_use`: the first request with this Idempotency-Key is still running',
  reconciliation_changed:
    '`reconciliation_changed`: the `digest` confirmed is not the report the ledger gives now; nothing was applied',
  parked_entry_handled:
    '`parked_entry_handled`: another decision on this parked ledger entry came first (re-driven or discarded, ' +
    'by whom and when in `detail`); nothing was done',
  parked_entry_refused:
    '`parked_entry_refused`: the database refused the re-driven entry again (its SQLSTATE in `detail`); it stays parked',
  payload_too_large: '`payload_too_large`: body over the limit (16 KiB by default), stated in `detail`',
  idempotency_key_reused: '`idempotency_key_reused`: this Idempotency-Key was used with another body or path',
  upstream_rejected: '`upstream_rejected`: the upstream refused the input (its message in `detail`)',
  rate_limited: '`rate_limited`: client or end-user quota used up; retry after `Retry-After` seconds',
  budget_exhausted:
    "`budget_exhausted`: a spend budget (the client's or all callers') cannot fit this inquiry; nothing was " +
    'sent, `detail` names the window and the units left, `Retry-After` is the seconds until it resets',
  upstream_error: '`upstream_error`: the upstream answered 5xx, malformed, or a supplier failed',
  upstream_unavailable:
    '`upstream_unavailable`: circuit open (with `Retry-After`), upstream credentials rejected, account disabled ' +
    'or credit exhausted; nothing was charged',
  auth_unavailable:
    '`auth_unavailable`: a JWT cannot be checked right now (identity provider unreachable, no usable keys); ' +
    'retry after `Retry-After` seconds',
  store_unavailable:
    '`store_unavailable`: the record store is unreachable; nothing was sent upstream (with `Retry-After`)',
  upstream_timeout: '`upstream_timeout`: no upstream answer in time; the inquiry is recorded as `unknown`',
  not_cached: '`not_cached`: `Cache-Control: only-if-cached` and no reusable answer; nothing was sent or recorded',
  internal: '`internal`: anything else; no internal detail in the body',
};

/** The text after the code (`\`code\`: `), whole: it may hold colons of its own (a header line). */
function whenSummary(code: ProblemCode): string {
  const when = WHEN[code];
  return when.slice(when.indexOf(': ') + 2);
}

type Headers = Record<string, HeaderObject | ReferenceObject>;

/** Response headers, by status, beside the ones every response has (see src/openapi.ts). */
export type HeadersByStatus = Partial<Record<number, Headers>>;

/** The response object of one status: the shared `Problem` schema and one example per code. */
export function problemResponse(statusCodes: ProblemCode[], headers?: Headers): ResponseObject {
  return {
    description: statusCodes.map((code) => WHEN[code]).join('; ') + '.',
    ...(headers ? { headers } : {}),
    content: {
      [PROBLEM_CONTENT_TYPE]: {
        schema: { $ref: getSchemaPath(ProblemSchema) },
        examples: Object.fromEntries(
          statusCodes.map((code) => [code, { summary: whenSummary(code), value: problemExample(code) }]),
        ),
      },
    },
  };
}

/** Documents the problem+json answers of an operation: one response per status. */
export function ApiProblemResponses(codes: ProblemCode[], headers: HeadersByStatus = {}): MethodDecorator {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of codes) byStatus.set(PROBLEM_STATUS[code], [...(byStatus.get(PROBLEM_STATUS[code]) ?? []), code]);
  const decorators = [...byStatus].map(([status, statusCodes]) =>
    ApiResponse({ status, ...problemResponse(statusCodes, headers[status]) }),
  );
  return applyDecorators(ApiExtraModels(ProblemSchema), ...decorators);
}
