import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import { ApiPublic } from '../openapi.js';

/** One indicator's state, e.g. `{ "status": "up", "mode": "redis" }`. */
const INDICATOR = {
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', enum: ['up', 'down'] } },
  additionalProperties: true,
} satisfies SchemaObject;

/** Terminus's answer: `{ status, info, error, details }`, each map keyed by check name. */
const TERMINUS_BODY = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ok', 'error', 'shutting_down'] },
    info: { type: 'object', additionalProperties: INDICATOR },
    error: { type: 'object', additionalProperties: INDICATOR },
    details: { type: 'object', additionalProperties: INDICATOR },
  },
} satisfies SchemaObject;

/** A Kubernetes probe: no credential, Terminus JSON on 200 and on 503. */
export function ApiProbe(summary: string, options: { canFail: boolean }): MethodDecorator {
  const decorators = [
    ApiTags('operations'),
    ApiPublic(),
    ApiOperation({ summary }),
    ApiResponse({
      status: 200,
      description: 'Up.',
      content: {
        'application/json': { schema: TERMINUS_BODY, example: { status: 'ok', info: {}, error: {}, details: {} } },
      },
    }),
  ];
  if (options.canFail) {
    decorators.push(
      ApiResponse({
        status: 503,
        description: 'Down: `error` names the failing check.',
        content: { 'application/json': { schema: TERMINUS_BODY } },
      }),
    );
  }
  return applyDecorators(...decorators);
}
