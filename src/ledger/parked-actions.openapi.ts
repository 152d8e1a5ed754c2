import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiParam, ApiResponse, type SchemaObject } from '@nestjs/swagger';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { ApiAdmin } from './admin-openapi-common.js';
import { MAX_REASON } from './parked-actions.js';

/** What an operator did with a parked entry (GET /admin/ledger/parked `handled`, and the actions' answer). */
export const PARKED_DECISION = {
  type: 'object',
  required: ['action', 'by', 'reason', 'at'],
  properties: {
    action: { type: 'string', enum: ['redriven', 'discarded'] },
    by: { type: 'string', description: 'The client id of the API key that decided.', example: 'finance' },
    reason: { type: 'string', maxLength: MAX_REASON },
    at: { type: 'string', format: 'date-time' },
    written: {
      type: 'boolean',
      description:
        'Re-driven only: true when the ledger wrote the entry anew, false when it held one with its key already.',
    },
  },
} satisfies SchemaObject;

const FACT = {
  ...PARKED_DECISION,
  required: ['id', ...PARKED_DECISION.required, 'replayed'],
  properties: {
    id: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    ...PARKED_DECISION.properties,
    replayed: {
      type: 'boolean',
      description: 'true: this decision (same action, key and reason) was already recorded; nothing was done again.',
    },
  },
} satisfies SchemaObject;

const WHAT = {
  redriven:
    'Writes the parked entry into the ledger as the queue held it (once, by its key, with its webhook event), ' +
    'and appends who did it and why. A database that refuses it again is 422 `parked_entry_refused`: nothing is written.',
  discarded: 'Appends who discarded the parked entry and why; the ledger is not written. The entry stays as evidence.',
};

export function ApiParkedAction(action: 'redriven' | 'discarded'): MethodDecorator {
  return applyDecorators(
    ApiAdmin(
      action === 'redriven' ? 'Re-drive a parked entry into the ledger' : 'Discard a parked entry',
      `Needs an API key with \`ledger:read\` and \`ledger:reconcile\`. ${WHAT[action]} The first decision on an ` +
        'entry wins, across replicas: the same request again (same action, key and reason) answers the recorded ' +
        'decision with `replayed: true`; any other is 409 `parked_entry_handled`, saying what was decided, by whom and when.',
    ),
    ApiParam({ name: 'id', description: 'The `id` of GET /admin/ledger/parked.', schema: FACT.properties.id }),
    ApiBody({
      required: true,
      schema: {
        type: 'object',
        required: ['reason'],
        additionalProperties: false,
        properties: {
          reason: {
            type: 'string',
            minLength: 1,
            maxLength: MAX_REASON,
            description: 'Why, for whoever reads the ledger next: trimmed, no control characters.',
            example: 'client id fixed in the identity provider; the entry is good',
          },
        },
      },
    }),
    ApiResponse({ status: 200, description: 'Recorded.', content: { 'application/json': { schema: FACT } } }),
    ApiProblemResponses([
      'validation_failed',
      'unauthenticated',
      'forbidden',
      'not_found',
      'parked_entry_handled',
      ...(action === 'redriven' ? (['parked_entry_refused'] as const) : []),
      'internal',
      'store_unavailable',
    ]),
  );
}
