import { applyDecorators } from '@nestjs/common';
import { ApiQuery, ApiResponse } from '@nestjs/swagger';
import { ADMIN_PROBLEMS, ApiAdmin, ENTRY, FROM, TO, moneyApart } from './admin-openapi-common.js';
import { LIST_FILTERS } from './console-reads.openapi.js';

export function ApiLedgerExport(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Ledger entries, streamed',
      'Needs an API key or an operator’s console token with `ledger:read`. NDJSON by default, CSV (a header row, RFC 4180) on `Accept: text/csv`; ' +
        'in (createdAt, trackId, kind) order, in bounded memory whatever the number of rows. The CSV columns end ' +
        'with `unitPrice,currency,resolvedBy` (the price recorded with the inquiry, empty when none; who learned a resolution).',
    ),
    FROM,
    TO,
    ...LIST_FILTERS,
    ApiQuery({
      name: 'latest',
      required: false,
      description:
        'true: one row per inquiry (its latest fact), newest first, filtered as GET /admin/inquiries filters ' +
        '(client, operation, handling, status, charged, reused): exactly the rows it pages through. Otherwise ' +
        'every entry, filtered by clientId and status (of each entry); the other list filters need latest=true (400).',
      schema: { type: 'string', enum: ['true', 'false'], default: 'false' },
    }),
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
      'Needs an API key or an operator’s console token with `ledger:read`. Days and months are UTC; each inquiry counted once by its latest fact; ' +
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
                  required: [
                    'clientId',
                    'period',
                    'inquiries',
                    'succeeded',
                    'failed',
                    'unknown',
                    'unitsSpent',
                    'reused',
                    'unitsSaved',
                  ],
                  properties: {
                    clientId: { type: 'string' },
                    period: { type: 'string', example: '2026-11-24' },
                    inquiries: { type: 'integer' },
                    succeeded: { type: 'integer' },
                    failed: { type: 'integer' },
                    unknown: { type: 'integer' },
                    unitsSpent: { type: 'integer' },
                    reused: {
                      type: 'integer',
                      description: 'Inquiries answered with a reused answer (docs/api.md §2).',
                    },
                    unitsSaved: { type: 'integer', description: 'The units those reused answers would have cost.' },
                    spentAmount: {
                      type: 'string',
                      pattern: '^\\d+(\\.\\d+)?$',
                      description:
                        'Σ each entry’s spent units × the unit price it recorded when its inquiry was made, in ' +
                        '`currency`, exact (a decimal string); only when COST_UNIT_PRICE is set.',
                    },
                    currency: {
                      type: 'string',
                      pattern: '^[A-Z]{3}$',
                      example: 'IRR',
                      description: 'Today’s COST_UNIT_PRICE currency.',
                    },
                    savedAmount: {
                      type: 'string',
                      pattern: '^\\d+(\\.\\d+)?$',
                      description: 'The same for `unitsSaved`: what reuse saved, at the prices recorded.',
                    },
                    ...moneyApart(true),
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
