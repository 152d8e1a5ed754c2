import { applyDecorators } from '@nestjs/common';
import { ApiQuery, ApiResponse, type SchemaObject } from '@nestjs/swagger';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import {
  ADMIN_PROBLEMS,
  ApiAdmin,
  ENTRY,
  FROM,
  OPERATION_NAME_SCHEMA,
  TO,
  moneyApart,
} from './admin-openapi-common.js';
import { MAX_LIST_ROWS } from './inquiry-list.js';
import { DEFAULT_LIST_ROWS } from './admin-query.js';

const json = (description: string, schema: SchemaObject) =>
  ApiResponse({ status: 200, description, content: { 'application/json': { schema } } });

const DECIMAL = { type: 'string', pattern: '^\\d+(\\.\\d+)?$', description: 'An exact decimal, as a string.' } as const;
const CURRENCY = {
  type: 'string',
  pattern: '^[A-Z]{3}$',
  example: 'IRR',
  description: 'ISO 4217, when COST_UNIT_PRICE is set.',
} as const;

/** The list's filters, shared with the export's `latest=true` (admin.openapi.ts). */
export const LIST_FILTERS = [
  ApiQuery({ name: 'clientId', required: false, schema: { type: 'string' } }),
  ApiQuery({ name: 'operation', required: false, schema: OPERATION_NAME_SCHEMA }),
  ApiQuery({ name: 'handling', required: false, schema: { type: 'string', enum: ['standard', 'advanced'] } }),
  ApiQuery({
    name: 'status',
    required: false,
    description: 'Of the latest fact.',
    schema: { type: 'string', enum: ['succeeded', 'failed', 'unknown'] },
  }),
  ApiQuery({
    name: 'charged',
    required: false,
    description: 'Of the latest fact.',
    schema: { type: 'string', enum: ['yes', 'no', 'possibly'] },
  }),
  ApiQuery({
    name: 'reused',
    required: false,
    description: 'An answer reused from an earlier inquiry.',
    schema: { type: 'string', enum: ['true', 'false'] },
  }),
];

export function ApiInquiryList(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Inquiries of a period, newest first, one row per inquiry',
      'Needs an API key or an operator’s console token with `ledger:read`. Each row is the latest fact of one inquiry (a reconciliation over a ' +
        'settlement over an overdue entry) with `spentUnits` (0 when not charged) and, with COST_UNIT_PRICE, ' +
        '`spentAmount`: spentUnits × the `unitPrice` the row recorded, in its own `currency` (absent when it ' +
        'recorded none: never today’s price). Paged by keyset on (createdAt, trackId): pass `next` as `after` for the next page; no ' +
        'OFFSET, so a page costs the same deep in a million rows. The same filters on GET /admin/ledger with ' +
        '`latest=true` download exactly these rows.',
    ),
    FROM,
    TO,
    ...LIST_FILTERS,
    ApiQuery({
      name: 'limit',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_ROWS, default: DEFAULT_LIST_ROWS },
    }),
    ApiQuery({
      name: 'after',
      required: false,
      description: 'The `next` cursor of the previous page (opaque).',
      schema: { type: 'string' },
    }),
    json('A page of inquiries.', {
      type: 'object',
      required: ['from', 'to', 'inquiries', 'next'],
      properties: {
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
        currency: CURRENCY,
        inquiries: {
          type: 'array',
          maxItems: MAX_LIST_ROWS,
          items: {
            ...ENTRY,
            required: [...ENTRY.required, 'spentUnits'],
            properties: {
              ...ENTRY.properties,
              spentUnits: { type: 'integer' },
              spentAmount: { ...DECIMAL, description: 'spentUnits × the row’s recorded unitPrice, in its currency.' },
              tracking: {
                type: 'object',
                description:
                  "An `unknown` (or one tracking resolved) the provider's tracking service was asked about " +
                  "(docs/api.md §8): how often, when last, and that question's result. Absent: never asked.",
                required: ['questions', 'lastAskedAt', 'lastAnswer'],
                properties: {
                  questions: { type: 'integer', minimum: 1 },
                  lastAskedAt: { type: 'string', format: 'date-time' },
                  lastAnswer: {
                    type: 'string',
                    example: 'not_found',
                    description:
                      'As vgw_tracking_questions_total labels it: yes, no, not_found, unrecognised, no_value, error, timeout, not_asked.',
                  },
                },
              },
            },
          },
        },
        next: { type: 'string', nullable: true, description: 'null on the last page.' },
      },
    }),
    ADMIN_PROBLEMS,
  );
}

const COUNT = { type: 'integer', minimum: 0 } as const;

export function ApiTrends(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Inquiries per day, client and operation, and failures by upstream code',
      'Needs an API key or an operator’s console token with `ledger:read`. Days in BUDGET_TIMEZONE (or `timeZone=UTC`), each inquiry counted once ' +
        'by its latest fact; `unitsSpent` counts inquiries charged or possibly charged. At most 400 days. ' +
        '`refusedBudget` and `refusedQuota` count inquiries refused before a trackId (429 budget_exhausted; 429 ' +
        'rate_limited by a client or end-user quota), per day in BUDGET_TIMEZONE whatever `timeZone` is asked, for ' +
        'every day the range touches; a row may hold only refusals. Each replica adds its counts every ' +
        'LEDGER_REFUSAL_FLUSH_SECONDS: one killed loses at most that interval of them. Rows are ordered by `day`, ' +
        "then `clientId`, then `operation` (code-unit order, not a locale's), the refusal-only rows among them. " +
        '`spentAmount` is Σ spent units × the price each entry recorded, in `currency` (today’s); `unitPrice` is ' +
        'today’s price, not the one money was read at.',
    ),
    FROM,
    TO,
    ApiQuery({
      name: 'timeZone',
      required: false,
      description: 'UTC, or BUDGET_TIMEZONE (the default).',
      schema: { type: 'string' },
    }),
    json('Trend rows.', {
      type: 'object',
      required: ['timeZone', 'calendar', 'from', 'to', 'rows', 'failures'],
      properties: {
        timeZone: { type: 'string' },
        calendar: { type: 'string', enum: ['gregory', 'persian'] },
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
        currency: CURRENCY,
        unitPrice: DECIMAL,
        rows: {
          type: 'array',
          items: {
            type: 'object',
            required: [
              'day',
              'clientId',
              'operation',
              'inquiries',
              'succeeded',
              'failed',
              'unknown',
              'reused',
              'unitsSpent',
              'refusedBudget',
              'refusedQuota',
            ],
            properties: {
              day: { type: 'string', example: '2026-11-24' },
              clientId: { type: 'string' },
              operation: OPERATION_NAME_SCHEMA,
              inquiries: COUNT,
              succeeded: COUNT,
              failed: COUNT,
              unknown: COUNT,
              reused: COUNT,
              unitsSpent: COUNT,
              spentAmount: DECIMAL,
              ...moneyApart(false),
              refusedBudget: { ...COUNT, description: '429 budget_exhausted that day (before any trackId).' },
              refusedQuota: { ...COUNT, description: '429 rate_limited by a quota that day (before any trackId).' },
            },
          },
        },
        failures: {
          type: 'array',
          items: {
            type: 'object',
            required: ['day', 'clientId', 'upstreamCode', 'upstreamMessage', 'count'],
            properties: {
              day: { type: 'string' },
              clientId: { type: 'string' },
              upstreamCode: { type: 'integer', nullable: true },
              upstreamMessage: { type: 'string', nullable: true },
              count: COUNT,
            },
          },
        },
      },
    }),
    ADMIN_PROBLEMS,
  );
}

export function ApiForecast(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Each budget and the company looking ahead at the rate of the last 7 days',
      'Needs an API key or an operator’s console token with `ledger:read`. Per budget: what its window has used (the budget state), the units ' +
        'the ledger records as spent in the last 7 days (of its client; of all for `*`), that rate per day, and ' +
        'when the budget runs out at that rate (`runsOutAt`: null when not before the window resets). The ' +
        "company: the ledger's spend in the current monthly window (BUDGET_TIMEZONE, BUDGET_CALENDAR) and its " +
        'projection to the window’s end; `clients` the same per client. A projection in units: `unitPrice` is ' +
        'today’s COST_UNIT_PRICE, for pricing what lies ahead (money already spent: GET /admin/usage).',
    ),
    json('The forecast.', {
      type: 'object',
      required: ['checkedAt', 'timeZone', 'calendar', 'rateDays', 'budgets', 'company', 'clients'],
      properties: {
        checkedAt: { type: 'string', format: 'date-time' },
        timeZone: { type: 'string' },
        calendar: { type: 'string', enum: ['gregory', 'persian'] },
        rateDays: { type: 'integer', example: 7 },
        currency: CURRENCY,
        unitPrice: DECIMAL,
        budgets: {
          type: 'array',
          items: {
            type: 'object',
            required: [
              'clientId',
              'window',
              'limitUnits',
              'usedUnits',
              'resetsAt',
              'lastDaysUnits',
              'ratePerDay',
              'runsOutAt',
            ],
            properties: {
              clientId: { type: 'string' },
              window: { type: 'string', enum: ['daily', 'monthly'] },
              limitUnits: COUNT,
              usedUnits: COUNT,
              resetsAt: { type: 'string', format: 'date-time' },
              lastDaysUnits: COUNT,
              ratePerDay: DECIMAL,
              runsOutAt: { type: 'string', format: 'date-time', nullable: true },
            },
          },
        },
        company: {
          type: 'object',
          required: ['window', 'startsAt', 'resetsAt', 'spentUnits', 'lastDaysUnits', 'ratePerDay', 'projectedUnits'],
          properties: {
            window: { type: 'string', enum: ['monthly'] },
            startsAt: { type: 'string', format: 'date-time' },
            resetsAt: { type: 'string', format: 'date-time' },
            spentUnits: COUNT,
            lastDaysUnits: COUNT,
            ratePerDay: DECIMAL,
            projectedUnits: COUNT,
          },
        },
        clients: {
          type: 'array',
          items: {
            type: 'object',
            required: ['clientId', 'spentUnits', 'lastDaysUnits'],
            properties: { clientId: { type: 'string' }, spentUnits: COUNT, lastDaysUnits: COUNT },
          },
        },
      },
    }),
    ApiProblemResponses(['unauthenticated', 'forbidden', 'internal', 'store_unavailable']),
  );
}
