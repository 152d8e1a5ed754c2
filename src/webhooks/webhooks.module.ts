import { Module } from '@nestjs/common';
import { BudgetModule } from '../budget/budget.module.js';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookEndpoints } from './webhook-endpoints.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { WebhooksController } from './webhooks.controller.js';

/** Signed events to the company's services (docs/api.md §9): the outbox's workers and its admin routes. */
@Module({
  imports: [LedgerModule, BudgetModule, CallerAuthModule],
  controllers: [WebhooksController],
  providers: [WebhookEndpoints, WebhookMetrics, WebhookDispatcher],
})
export class WebhooksModule {}
