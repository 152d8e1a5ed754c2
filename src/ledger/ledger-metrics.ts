import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { GatewayMetrics } from '../observability/metrics.js';

/**
 * The ledger's series, on the gateway's registry; all exist from start-up at 0, so the alerts
 * that read them (helm chart rules: LedgerBacklog, LedgerEntriesParked, ReconciliationUnsentCharges) see the
 * first rise (docs/runbooks.md).
 */
@Injectable()
export class LedgerMetrics {
  /** Set by the drainer after each look at the queue (a scrape never waits on Redis). */
  readonly queueDepth: Gauge;
  readonly queueOldestAge: Gauge;
  readonly entriesWritten: Counter<'kind'>;
  readonly writeFailures: Counter;
  readonly entriesParked: Counter;
  readonly unsentCharges: Counter;
  readonly workerRestarts: Counter;

  constructor(metrics: GatewayMetrics) {
    const registers = [metrics.registry];
    this.queueDepth = new Gauge({
      name: 'vgw_ledger_queue_depth',
      help: 'Ledger entries waiting in the queue (Redis stream or in-process) for PostgreSQL',
      registers,
    });
    this.queueOldestAge = new Gauge({
      name: 'vgw_ledger_queue_oldest_age_seconds',
      help: 'Age of the oldest ledger entry still waiting for PostgreSQL (0 when none)',
      registers,
    });
    this.entriesWritten = new Counter({
      name: 'vgw_ledger_entries_written_total',
      help: 'Ledger entries newly written to PostgreSQL by this replica, by kind (settled, overdue, reconciled)',
      labelNames: ['kind'] as const,
      registers,
    });
    this.writeFailures = new Counter({
      name: 'vgw_ledger_write_failures_total',
      help: 'Batches of ledger entries that could not be written to PostgreSQL (retried)',
      registers,
    });
    this.entriesParked = new Counter({
      name: 'vgw_ledger_entries_parked_total',
      help: 'Ledger entries the database refused for their data, parked in ledger_parked (GET /admin/ledger/parked)',
      registers,
    });
    this.unsentCharges = new Counter({
      name: 'vgw_reconciliation_unsent_charges_total',
      help: 'trackIds the provider charged that this gateway never sent (credentials used elsewhere)',
      registers,
    });
    this.workerRestarts = new Counter({
      name: 'vgw_ledger_worker_restarts_total',
      help: "Times the embedded ledger's worker thread died after opening and was re-created (counted at the death; readiness is 503 until the new one is open)",
      registers,
    });
    for (const kind of ['settled', 'overdue', 'reconciled']) this.entriesWritten.inc({ kind }, 0);
    this.queueDepth.set(0);
    this.queueOldestAge.set(0);
  }
}
