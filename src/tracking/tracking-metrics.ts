import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { GatewayMetrics } from '../observability/metrics.js';
import { TRACKING_RESULTS } from './tracking-answer.js';

/**
 * The tracking service's series (docs/operations.md, "Outcomes learned from the provider"): each
 * result at 0 from start-up, so increase() sees the first; the gauge the alert
 * LedgerUnknownsOlderThanADay reads (docs/runbooks.md).
 */
@Injectable()
export class TrackingMetrics {
  readonly questions: Counter<'result'>;
  readonly unknownsOlderThanADay: Gauge;

  constructor(metrics: GatewayMetrics) {
    const registers = [metrics.registry];
    this.questions = new Counter({
      name: 'vgw_tracking_questions_total',
      help: "Questions this replica sent to the upstream's tracking service about unknown inquiries, by result",
      labelNames: ['result'] as const,
      registers,
    });
    this.unknownsOlderThanADay = new Gauge({
      name: 'vgw_ledger_unknowns_older_than_a_day',
      help: 'Inquiries still unknown (possibly charged) in the ledger between a day and 30 days after they were made',
      registers,
    });
    for (const result of TRACKING_RESULTS) this.questions.inc({ result }, 0);
    this.unknownsOlderThanADay.set(0);
  }
}
