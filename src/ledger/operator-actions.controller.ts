import { Controller, Get, Query, Res, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiQuery, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { API_KEY_SCHEME } from '../openapi.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { ProblemException } from '../problem/problem.js';
import { operatorOnly } from './admin.controller.js';
import { LedgerCalls } from './ledger-call.js';
import { LedgerStore } from './ledger.store.js';
import { latestActions } from './operator-actions.js';

/** `GET /admin/operator-actions`: who reconciled, exported or retried a delivery, newest first. */
@Controller('admin')
@UseGuards(CallerAuthGuard)
export class OperatorActionsController {
  private readonly ledger = new LedgerCalls();

  constructor(private readonly store: LedgerStore) {}

  @Get('operator-actions')
  @RequireScopes('ledger:read')
  @ApiOperation({
    summary: 'Who did what: reconciliations, exports and delivery retries, newest first',
    description:
      "API keys or operators' console tokens with `ledger:read`. Each names the operator (a console " +
      "sign-in's `sub` and name, or an API key's client id); `summary` holds counts and periods, no end user's data.",
  })
  @ApiTags('administration')
  @ApiSecurity(API_KEY_SCHEME)
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } })
  @ApiOkResponse({
    description: 'The latest actions.',
    schema: {
      type: 'object',
      required: ['actions'],
      properties: {
        actions: {
          type: 'array',
          items: {
            type: 'object',
            required: ['at', 'action', 'kind', 'id', 'requestId', 'summary'],
            properties: {
              at: { type: 'string', format: 'date-time' },
              action: { type: 'string', enum: ['reconciliation', 'export', 'delivery_retry'] },
              kind: { type: 'string', enum: ['operator', 'api_key'] },
              id: { type: 'string' },
              name: { type: 'string' },
              requestId: { type: 'string', nullable: true },
              summary: { type: 'object', additionalProperties: true },
            },
          },
        },
      },
    },
  })
  @ApiProblemResponses(['validation_failed', 'unauthenticated', 'forbidden', 'internal', 'store_unavailable'])
  async list(
    @CurrentCaller() caller: Caller,
    @Query('limit') limit: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    operatorOnly(caller);
    if (limit !== undefined && (typeof limit !== 'string' || !/^[1-9][0-9]{0,2}$/.test(limit) || Number(limit) > 500))
      throw new ProblemException('validation_failed', 'limit must be a whole number from 1 to 500.', {
        errors: [{ field: 'limit', message: 'must be a whole number from 1 to 500' }],
      });
    void reply.header('cache-control', 'no-store');
    const actions = await this.ledger.run('operator actions', async () => {
      await this.store.ready();
      return latestActions(this.store.db, limit === undefined ? 50 : Number(limit));
    });
    return { actions };
  }
}
