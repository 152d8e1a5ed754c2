import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Every Prometheus metric of one gateway process, on its own registry (so several app
 * instances can live in one test process). Labels carry operation names and outcomes
 * only: never a client secret, token, trackId or personal identifier.
 */
@Injectable()
export class GatewayMetrics {
  readonly registry = new Registry();

  readonly upstreamCalls = new Histogram({
    name: 'vgw_upstream_call_duration_seconds',
    help: 'Upstream HTTP calls by operation and outcome',
    labelNames: ['operation', 'outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly tokenRenewals = new Counter({
    name: 'vgw_token_renewals_total',
    help: 'Upstream token renewals performed by this process, by grant and result',
    labelNames: ['grant', 'result'] as const,
    registers: [this.registry],
  });

  readonly tokenAdoptions = new Counter({
    name: 'vgw_token_adopted_total',
    help: 'Token records adopted from the shared store (renewed by another replica)',
    registers: [this.registry],
  });

  readonly inquiries = new Counter({
    name: 'vgw_inquiries_total',
    help: 'Inquiries by operation and final status',
    labelNames: ['operation', 'status'] as const,
    registers: [this.registry],
  });

  readonly idempotentReplays = new Counter({
    name: 'vgw_idempotent_replays_total',
    help: 'Responses replayed for a repeated Idempotency-Key',
    registers: [this.registry],
  });

  readonly circuitOpen = new Gauge({
    name: 'vgw_upstream_circuit_open',
    help: '1 while the upstream circuit breaker refuses inquiries',
    registers: [this.registry],
  });

  readonly storeUp = new Gauge({
    name: 'vgw_store_up',
    help: '1 when the record store answered the last readiness check',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'vgw_' });
  }

  observeCall(operation: string, outcome: string, seconds: number): void {
    this.upstreamCalls.observe({ operation, outcome }, seconds);
  }
}
