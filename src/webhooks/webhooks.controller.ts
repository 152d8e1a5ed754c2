import { Controller, Get, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { isUUID } from 'class-validator';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { operatorOnly } from '../ledger/admin.controller.js';
import { LedgerCalls } from '../ledger/ledger-call.js';
import { LedgerStore } from '../ledger/ledger.store.js';
import { operatorOf, recordAction } from '../ledger/operator-actions.js';
import { ProblemException } from '../problem/problem.js';
import { WebhookOutbox } from './webhook-outbox.js';
import { ApiWebhookDeliveries, ApiWebhookRetry } from './webhooks.openapi.js';

/**
 * The operators' view of webhook deliveries (docs/api.md §9): on the ops listener with the other
 * /admin/ routes when OPS_PORT is set; API keys or operators' console tokens, never an app's JWT.
 */
@Controller('admin/webhooks/deliveries')
@UseGuards(CallerAuthGuard)
export class WebhooksController {
  private readonly ledger = new LedgerCalls();
  private readonly outbox: WebhookOutbox;

  constructor(private readonly store: LedgerStore) {
    this.outbox = new WebhookOutbox(store);
  }

  @Get()
  @RequireScopes('ledger:read')
  @ApiWebhookDeliveries()
  async deliveries(@CurrentCaller() caller: Caller, @Query('status') status: unknown) {
    operatorOnly(caller);
    if (status !== 'failing' && status !== 'dead')
      throw new ProblemException('validation_failed', 'status must be failing or dead.', {
        errors: [{ field: 'status', message: 'must be failing or dead' }],
      });
    return { deliveries: await this.ledger.run('webhook deliveries', () => this.outbox.list(status)) };
  }

  @Post(':id/retry')
  @HttpCode(202)
  @RequireScopes('ledger:read', 'ledger:reconcile')
  @ApiWebhookRetry()
  async retry(@CurrentCaller() caller: Caller, @Param('id') id: string, @Req() request: FastifyRequest) {
    operatorOnly(caller);
    if (!isUUID(id)) throw new ProblemException('not_found', 'No webhook delivery has this id.');
    const delivery = await this.ledger.run('webhook retry', () => this.outbox.retry(id));
    if (!delivery) throw new ProblemException('not_found', 'No webhook delivery has this id.');
    await this.ledger.run('webhook retry record', () =>
      recordAction(this.store.db, operatorOf(caller), 'delivery_retry', { delivery: id }, request.id),
    );
    return delivery;
  }
}
