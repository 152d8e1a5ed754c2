import { applyDecorators } from '@nestjs/common';
import { ApiQuery, ApiResponse, type SchemaObject } from '@nestjs/swagger';
import { responseHeader } from '../openapi.js';
import { MAX_ROWS } from './reconciliation.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { PARKED_DECISION } from './parked-actions.openapi.js';
import { ADMIN_PROBLEMS, ApiAdmin, DATE_QUERY, FROM, TO } from './admin-openapi-common.js';

const LIST = {
  type: 'object',
  required: ['count', 'trackIds', 'truncated'],
  properties: {
    count: { type: 'integer' },
    trackIds: { type: 'array', items: { type: 'string', format: 'uuid' }, maxItems: 1000 },
    truncated: { type: 'boolean' },
    units: {
      type: 'integer',
      description: 'Lists of inquiries the ledger has: their units, all of them (not capped).',
    },
    money: {
      type: 'array',
      description:
        'Those units at the price each inquiry recorded, by currency (exact decimal string); unpriced units apart.',
      items: {
        type: 'object',
        required: ['currency', 'amount'],
        properties: { currency: { type: 'string' }, amount: { type: 'string' } },
      },
    },
  },
} satisfies SchemaObject;

export function ApiParkedEntries(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Ledger entries the database refused, parked',
      'Needs an API key or an operator’s console token with `ledger:read`. Entries parked in [from, to) (by when they were parked), oldest ' +
        'first, at most 1000 (`truncated` when there are more): each with the database SQLSTATE and message and ' +
        'the entry as the queue held it, JSON text with lone surrogates, control characters and U+2028/U+2029 as \\u escapes ' +
        '(docs/runbooks.md, LedgerEntriesParked), its `id`, and `handled`: what an operator decided with it, or null.',
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
                  required: ['id', 'trackId', 'kind', 'requestId', 'code', 'message', 'parkedAt', 'entry', 'handled'],
                  properties: {
                    id: {
                      type: 'string',
                      pattern: '^[0-9a-f]{64}$',
                      description: 'What POST /admin/ledger/parked/{id}/redrive and /discard name.',
                    },
                    trackId: { type: 'string', nullable: true, description: 'As the entry held it, escaped.' },
                    kind: { type: 'string', nullable: true },
                    requestId: { type: 'string', nullable: true },
                    code: { type: 'string', example: '22P02', description: 'The SQLSTATE the database refused with.' },
                    message: { type: 'string' },
                    parkedAt: { type: 'string', format: 'date-time' },
                    entry: { type: 'string', description: 'The entry (without its upstream data) as JSON text.' },
                    handled: {
                      ...PARKED_DECISION,
                      nullable: true,
                      description:
                        'What an operator decided (re-driven or discarded, by whom, why, when); null while undecided.',
                    },
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
      'Needs an API key or an operator’s console token with `ledger:read` and `ledger:reconcile`. Body `text/csv` with a header row naming a ' +
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
      name: 'digest',
      required: false,
      description:
        "A dry run's `digest`: the list is applied only if it changes and reports exactly what that dry run " +
        'said; otherwise 409 `reconciliation_changed` and nothing is written. Not with `dryRun=true`.',
      schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
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
              'digest',
            ],
            properties: {
              digest: {
                type: 'string',
                description:
                  "What this run changes and reports, hashed (SHA-256, base64url): send a dry run's back as `digest` to apply exactly it.",
              },
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
        'reconciliation_changed',
        'rate_limited',
        'internal',
        'store_unavailable',
      ],
      { 429: { 'Retry-After': responseHeader('Retry-After', true) } },
    ),
  );
}
