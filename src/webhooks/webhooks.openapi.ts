import { applyDecorators } from '@nestjs/common';
import { ApiParam, ApiQuery, ApiResponse, type SchemaObject } from '@nestjs/swagger';
import { ADMIN_PROBLEMS, ApiAdmin } from '../ledger/admin-openapi-common.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { LIST_ROWS } from './webhook-outbox.js';

const DELIVERY = {
  type: 'object',
  required: [
    'id',
    'endpointId',
    'type',
    'status',
    'attempts',
    'occurredAt',
    'nextAttemptAt',
    'lastStatus',
    'lastError',
    'data',
  ],
  properties: {
    id: {
      type: 'string',
      format: 'uuid',
      description: 'The `webhook-id` of every attempt (receivers deduplicate on it).',
    },
    endpointId: { type: 'string', example: 'billing' },
    type: { type: 'string', enum: ['inquiry.settled', 'inquiry.resolved', 'budget.threshold', 'ledger.parked'] },
    status: { type: 'string', enum: ['pending', 'delivered', 'dead'] },
    attempts: { type: 'integer', minimum: 0 },
    occurredAt: { type: 'string', format: 'date-time' },
    nextAttemptAt: { type: 'string', format: 'date-time', nullable: true },
    lastStatus: { type: 'integer', nullable: true, description: "The receiver's last HTTP status." },
    lastError: {
      type: 'string',
      nullable: true,
      example: 'HTTP 500',
      description: 'HTTP <status>, or a network error code.',
    },
    data: { type: 'object', description: 'The event\'s data, as sent (docs/api.md, "Webhooks").' },
  },
} satisfies SchemaObject;

export function ApiWebhookDeliveries(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Webhook deliveries that fail or are dead',
      'Needs an API key or an operator’s console token with `ledger:read`. `failing`: not delivered yet, the last attempt failed (retried with ' +
        'backoff for 24 hours); `dead`: given up. Newest first, at most ' +
        `${LIST_ROWS}.`,
    ),
    ApiQuery({ name: 'status', required: true, schema: { type: 'string', enum: ['failing', 'dead'] } }),
    ApiResponse({
      status: 200,
      description: 'Deliveries.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['deliveries'],
            properties: { deliveries: { type: 'array', maxItems: LIST_ROWS, items: DELIVERY } },
          },
        },
      },
    }),
    ADMIN_PROBLEMS,
  );
}

export function ApiWebhookRetry(): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      'Send a webhook delivery again',
      'Needs an API key or an operator’s console token with `ledger:read` and `ledger:reconcile`. The delivery (any status) is due at once, with ' +
        'the same `webhook-id`, and a fresh 24 hours of retries.',
    ),
    ApiParam({ name: 'id', schema: { type: 'string', format: 'uuid' } }),
    ApiResponse({ status: 202, description: 'Due now.', content: { 'application/json': { schema: DELIVERY } } }),
    ApiProblemResponses(['not_found']),
    ADMIN_PROBLEMS,
  );
}
