import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiSecurity, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { API_KEY_SCHEME } from '../openapi.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { BUILT_IN_OPERATIONS } from '../inquiry/catalog/built-in-operations.js';
import { OPERATION_NAME } from '../inquiry/catalog/operation.js';

export const DATE_QUERY = { type: 'string', example: '2026-11-24' } satisfies SchemaObject;
export const FROM = ApiQuery({
  name: 'from',
  required: true,
  description: 'ISO 8601 date or timestamp, inclusive.',
  schema: DATE_QUERY,
});
export const TO = ApiQuery({
  name: 'to',
  required: true,
  description: 'ISO 8601 date or timestamp, exclusive.',
  schema: DATE_QUERY,
});

/**
 * An operation's name in the ledger: a pattern, not the catalog's names, as rows outlive a
 * catalog (an operation removed from INQUIRY_OPERATIONS keeps its entries).
 */
export const OPERATION_NAME_SCHEMA = {
  type: 'string',
  pattern: OPERATION_NAME.source,
  example: BUILT_IN_OPERATIONS[0].name,
  description: 'A built-in operation or one the operator added (docs/api.md §10).',
} satisfies SchemaObject;

export const ENTRY = {
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
    operation: OPERATION_NAME_SCHEMA,
    requestHandlingType: { type: 'string', enum: ['standard', 'advanced'] },
    status: { type: 'string', enum: ['succeeded', 'failed', 'unknown'] },
    charged: { type: 'string', enum: ['yes', 'no', 'possibly'] },
    costUnits: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    completedAt: { type: 'string', format: 'date-time' },
    upstreamCode: { type: 'integer' },
    upstreamMessage: {
      type: 'string',
      maxLength: 200,
      description: "The upstream's `meta.message` of a failed call, runs of 8 or more digits masked with `#`.",
    },
    requestId: { type: 'string' },
    revision: {
      type: 'integer',
      minimum: 1,
      description: "A `reconciled` entry's place among the inquiry's resolutions: 1, then 2, 3, … per correction.",
    },
    resolvedBy: {
      type: 'string',
      enum: ['reconciliation', 'tracking'],
      description:
        "A `reconciled` entry's source: the provider's list (`reconciliation`) or its tracking service (`tracking`, docs/api.md §8).",
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
    unitPrice: {
      type: 'string',
      pattern: '^\\d+(\\.\\d{1,6})?$',
      description:
        'What one cost unit cost when the inquiry was made (COST_UNIT_PRICE then), copied to every later fact ' +
        'about it; absent when none was set then or the entry predates migration 9 (the CSV: empty).',
    },
    currency: { type: 'string', pattern: '^[A-Z]{3}$', description: "`unitPrice`'s ISO 4217 code." },
  },
} satisfies SchemaObject;

const DECIMAL_STRING = { type: 'string', pattern: '^\\d+(\\.\\d+)?$' } as const;

/**
 * What an aggregate row's money leaves out of its amount in today's currency (recorded-money.ts):
 * units of entries that recorded no price, and amounts recorded in another currency (never converted).
 */
export function moneyApart(withSavings: boolean): Record<string, SchemaObject> {
  return {
    unpricedUnits: {
      type: 'integer',
      minimum: 1,
      description:
        'Spent units whose entries recorded no unit price (written before migration 9, or while COST_UNIT_PRICE ' +
        'was unset): in no amount, never priced at today’s price. Absent when none.',
    },
    ...(withSavings
      ? { unpricedSavedUnits: { type: 'integer', minimum: 1, description: 'The same for `unitsSaved`.' } }
      : {}),
    otherCurrencies: {
      type: 'array',
      description:
        'Amounts recorded in a currency other than today’s COST_UNIT_PRICE currency, as recorded (never converted ' +
        'nor added to the amount above). Absent when none.',
      items: {
        type: 'object',
        required: ['currency', 'spentAmount', ...(withSavings ? ['savedAmount'] : [])],
        properties: {
          currency: { type: 'string', pattern: '^[A-Z]{3}$' },
          spentAmount: DECIMAL_STRING,
          ...(withSavings ? { savedAmount: DECIMAL_STRING } : {}),
        },
      },
    },
  };
}

export const ADMIN_PROBLEMS = ApiProblemResponses([
  'validation_failed',
  'unauthenticated',
  'forbidden',
  'internal',
  'store_unavailable',
]);

/** Administration: API keys or operators' console tokens (an app's JWT never carries the ledger scopes), docs/api.md §7. */
export function ApiAdmin(summary: string, description: string): MethodDecorator {
  return applyDecorators(
    ApiTags('administration'),
    ApiSecurity(API_KEY_SCHEME),
    ApiOperation({ summary, description }),
  );
}
