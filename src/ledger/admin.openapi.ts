import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiSecurity, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { API_KEY_SCHEME, responseHeader } from '../openapi.js';
import { MAX_ROWS } from './reconciliation.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';

const DATE_QUERY = { type: 'string', example: '2026-11-24' } satisfies SchemaObject;
const FROM = ApiQuery({
  name: 'from',
  required: true,
  description: 'ISO 8601 date or timestamp, inclusive.',
  schema: DATE_QUERY,
});
const TO = ApiQuery({
  name: 'to',
  required: true,
  description: 'ISO 8601 date or timestamp, exclusive.',
  schema: DATE_QUERY,
});

const ENTRY = {
  type: 'object',
  required: [
    'trackId',
    'kind',
    'clientId',
    'operation',
    'requestHandlingType',
    'status',
    'charged',
    'costUnits',
    'createdAt',
  ],
  properties: {
    trackId: { type: 'string', format: 'uuid' },
    kind: { type: 'string', enum: ['settled', 'overdue', 'reconciled'] },
    clientId: { type: 'string' },
    subjectSha256: { type: 'string' },
    operation: { type: 'string', enum: ['shahkar', 'iban'] },
    requestHandlingType: { type: 'string', enum: ['standard', 'advanced'] },
    status: { type: 'string', enum: ['succeeded', 'failed', 'unknown'] },
    charged: { type: 'string', enum: ['yes', 'no', 'possibly'] },
    costUnits: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    completedAt: { type: 'string', format: 'date-time' },
    upstreamCode: { type: 'integer' },
    requestId: { type: 'string' },
    revision: {
      type: 'integer',
      minimum: 1,
      description: "A `reconciled` entry's place among the inquiry's resolutions: 1, then 2, 3, … per correction.",
    },
    reservation: {
      type: 'object',
      description: 'What the budget reservation counted (NDJSON only): a resolution moves exactly this.',
      required: ['units', 'budgets', 'daily', 'monthly'],
      properties: {
        units: { type: 'integer' },
        budgets: { type: 'array', items: { type: 'string' } },
        daily: { type: 'string', example: 'd2026-11-24' },
        monthly: { type: 'string', example: 'm2026-11' },
      },
    },
  },
} satisfies SchemaObject;

const LIST = {
  type: 'object',
  required: ['count', 'trackIds', 'truncated'],
  properties: {
    count: { type: 'integer' },
    trackIds: { type: 'array', items: { type: 'string', format: 'uuid' }, maxItems: 1000 },
    truncated: { type: 'boolean' },
  },
} satisfies SchemaObject;

const ADMIN_PROBLEMS = ApiProblemResponses([
  'validation_failed',
  'unauthenticated',
  'forbidden',
  'internal',
  'store_unavailable',
]);

/** Administration: API keys only (a JWT never carries the ledger scopes), docs/api.md §7. */
function ApiAdmin(summary: string, description: string): MethodDecorator {
  return applyDecorators(
    ApiTags('administration'),
    ApiSecurity(API_KEY_SCHEME),
    ApiOperation({ summary, description }),
  );
}

export function ApiLedgerExport(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Ledger entries, streamed',
      'Needs an API key with `ledger:read`. NDJSON by default, CSV (a header row, RFC 4180) on `Accept: text/csv`; ' +
        'in (createdAt, trackId, kind) order, in bounded memory whatever the number of rows.',
    ),
    FROM,
    TO,
    ApiQuery({ name: 'clientId', required: false, schema: { type: 'string' } }),
    ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: ['succeeded', 'failed', 'unknown'] } }),
    ApiQuery({
      name: 'trackId',
      required: false,
      description: "One inquiry's entries only (the console's lookup).",
      schema: { type: 'string', format: 'uuid' },
    }),
    ApiResponse({
      status: 200,
      description: 'One entry per line.',
      content: { 'application/x-ndjson': { schema: ENTRY }, 'text/csv': { schema: { type: 'string' } } },
    }),
    ADMIN_PROBLEMS,
  );
}

export function ApiUsage(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Usage per client and period',
      'Needs an API key with `ledger:read`. Days and months are UTC; each inquiry counted once by its latest fact; ' +
        '`unitsSpent` counts inquiries charged or possibly charged.',
    ),
    FROM,
    TO,
    ApiQuery({ name: 'period', required: false, schema: { type: 'string', enum: ['day', 'month'], default: 'day' } }),
    ApiResponse({
      status: 200,
      description: 'Usage rows.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['timeZone', 'period', 'from', 'to', 'usage'],
            properties: {
              timeZone: { type: 'string', enum: ['UTC'] },
              period: { type: 'string', enum: ['day', 'month'] },
              from: { type: 'string', format: 'date-time' },
              to: { type: 'string', format: 'date-time' },
              usage: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['clientId', 'period', 'inquiries', 'succeeded', 'failed', 'unknown', 'unitsSpent'],
                  properties: {
                    clientId: { type: 'string' },
                    period: { type: 'string', example: '2026-11-24' },
                    inquiries: { type: 'integer' },
                    succeeded: { type: 'integer' },
                    failed: { type: 'integer' },
                    unknown: { type: 'integer' },
                    unitsSpent: { type: 'integer' },
                  },
                },
              },
            },
          },
        },
      },
    }),
    ADMIN_PROBLEMS,
  );
}

export function ApiParkedEntries(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Ledger entries the database refused, parked',
      'Needs an API key with `ledger:read`. Entries parked in [from, to) (by when they were parked), oldest ' +
        'first, at most 1000 (`truncated` when there are more): each with the database SQLSTATE and message and ' +
        'the entry as the queue held it, JSON text with lone surrogates, control characters and U+2028/U+2029 as \\u escapes ' +
        '(docs/runbooks.md, LedgerEntriesParked).',
    ),
    FROM,
    TO,
    ApiResponse({
      status: 200,
      description: 'Parked entries.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['from', 'to', 'parked', 'truncated'],
            properties: {
              from: { type: 'string', format: 'date-time' },
              to: { type: 'string', format: 'date-time' },
              truncated: { type: 'boolean' },
              parked: {
                type: 'array',
                maxItems: 1000,
                items: {
                  type: 'object',
                  required: ['trackId', 'kind', 'requestId', 'code', 'message', 'parkedAt', 'entry'],
                  properties: {
                    trackId: { type: 'string', nullable: true, description: 'As the entry held it, escaped.' },
                    kind: { type: 'string', nullable: true },
                    requestId: { type: 'string', nullable: true },
                    code: { type: 'string', example: '22P02', description: 'The SQLSTATE the database refused with.' },
                    message: { type: 'string' },
                    parkedAt: { type: 'string', format: 'date-time' },
                    entry: { type: 'string', description: 'The entry (without its upstream data) as JSON text.' },
                  },
                },
              },
            },
          },
        },
      },
    }),
    ADMIN_PROBLEMS,
  );
}

export function ApiReconciliation(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      "The provider's list of charged inquiries against the ledger",
      'Needs an API key with `ledger:read` and `ledger:reconcile`. Body `text/csv` with a header row naming a ' +
        '`trackId` column and at least one row (otherwise 400 `validation_failed`, nothing written), at most ' +
        `${MAX_ROWS} rows (413 \`payload_too_large\`: send it in parts by period). The file is read and checked ` +
        'whole before anything is written. Each list holds the first 1000 trackIds (`truncated` when there are ' +
        'more). A resolution or correction is appended (the history kept) and moves the budgets by exactly the ' +
        'reservation recorded with the inquiry. The same file twice appends nothing the second time. One at a ' +
        'time per instance: another sent meanwhile is 429 `rate_limited` with `Retry-After`.',
    ),
    ApiQuery({
      name: 'dryRun',
      required: false,
      description: 'true: the same answer, and nothing is written (no entry, no budget move, no metric).',
      schema: { type: 'boolean', default: false },
    }),
    ApiQuery({
      name: 'from',
      required: false,
      description: "The provider's billing period, inclusive.",
      schema: DATE_QUERY,
    }),
    ApiQuery({
      name: 'to',
      required: false,
      description: "The provider's billing period, exclusive.",
      schema: DATE_QUERY,
    }),
    ApiResponse({
      status: 200,
      description: 'Counts and capped lists.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: [
              'rows',
              'dryRun',
              'chargedAndRecorded',
              'chargedNotInLedger',
              'parked',
              'recordedNotCharged',
              'chargedButRecordedNotCharged',
              'resolved',
              'resolvedNotCharged',
              'correctedToCharged',
              'correctedToNotCharged',
              'unknownsAbsentFromList',
              'period',
            ],
            properties: {
              rows: { type: 'integer' },
              dryRun: { type: 'boolean' },
              chargedAndRecorded: LIST,
              chargedNotInLedger: LIST,
              parked: {
                ...LIST,
                description:
                  'On the list, with no entry because the database refused it and it was parked (GET /admin/ledger/parked): not a security event.',
              },
              recordedNotCharged: LIST,
              chargedButRecordedNotCharged: LIST,
              resolved: LIST,
              resolvedNotCharged: LIST,
              correctedToCharged: {
                ...LIST,
                description: 'Resolved earlier as not charged, on this list: a correction (charged) appended.',
              },
              correctedToNotCharged: {
                ...LIST,
                description:
                  'Resolved earlier as charged, absent from this list of its named period: a correction appended.',
              },
              unknownsAbsentFromList: {
                type: 'string',
                enum: ['resolvedNotCharged', 'leftUnresolved'],
                description:
                  '`unknown` entries absent from the list are resolved as not charged only when `from`/`to` name the period.',
              },
              period: {
                type: 'object',
                nullable: true,
                properties: {
                  from: { type: 'string', format: 'date-time' },
                  to: { type: 'string', format: 'date-time' },
                },
              },
            },
          },
        },
      },
    }),
    ApiProblemResponses(
      [
        'validation_failed',
        'unauthenticated',
        'forbidden',
        'payload_too_large',
        'rate_limited',
        'internal',
        'store_unavailable',
      ],
      { 429: { 'Retry-After': responseHeader('Retry-After', true) } },
    ),
  );
}
