import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { GatewayMetrics } from '../observability/metrics.js';

export const DELIVERY_RESULTS = ['delivered', 'retried', 'dead'] as const;
export type DeliveryResult = (typeof DELIVERY_RESULTS)[number];

/**
 * The webhooks' series (docs/operations.md, "Webhooks"): attempts by endpoint and result, and
 * the age of each endpoint's oldest pending delivery, which the WebhookDeliveriesStuck alert
 * reads. Every configured endpoint's series exist from start-up at 0. Labels are endpoint ids
 * (configuration), never a URL or a secret.
 */
@Injectable()
export class WebhookMetrics {
  readonly attempts: Counter<'endpoint' | 'result'>;
  readonly oldestPending: Gauge<'endpoint'>;

  constructor(metrics: GatewayMetrics) {
    const registers = [metrics.registry];
    this.attempts = new Counter({
      name: 'vgw_webhook_deliveries_total',
      help: 'Webhook delivery attempts by endpoint and result: delivered (2xx), retried (failed, tried again later), dead (given up)',
      labelNames: ['endpoint', 'result'] as const,
      registers,
    });
    this.oldestPending = new Gauge({
      name: 'vgw_webhook_oldest_pending_seconds',
      help: "Age of each endpoint's oldest webhook delivery not yet delivered (0 when none)",
      labelNames: ['endpoint'] as const,
      registers,
    });
  }

  /** The series of these endpoints at 0 (start-up and a re-read), others' kept. */
  declare(endpointIds: readonly string[]): void {
    for (const endpoint of endpointIds) {
      for (const result of DELIVERY_RESULTS) this.attempts.inc({ endpoint, result }, 0);
      this.oldestPending.set({ endpoint }, 0);
    }
  }

  observeOldest(endpointIds: readonly string[], ages: Map<string, number>): void {
    for (const endpoint of endpointIds) this.oldestPending.set({ endpoint }, ages.get(endpoint) ?? 0);
  }
}
