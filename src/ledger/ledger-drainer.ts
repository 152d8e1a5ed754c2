import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { setTimeout as delay } from 'node:timers/promises';
import type { AppConfig } from '../config/app-config.js';
import { EntryWriter, type ParkedEntry } from './entry-writer.js';
import { LedgerDatabase } from './ledger-database.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LedgerQueue } from './ledger-queue.js';
import { dropExpiredRefusals } from './ledger-refusals.js';
import { dropExpiredPartitions, ensurePartitions, monthStart } from './ledger-schema.js';
import { LedgerStore } from './ledger.store.js';
import { ParkedEntries, storableText } from './parked-entries.js';
import { WakeablePause } from '../vocabulary/wakeable-pause.js';

/** Entries per batch: one INSERT statement each (docs/performance.md, "Ledger"). */
export const DRAIN_BATCH = 1_000;
/**
 * A queue with less than a batch is looked at again after this long: an entry reaches
 * PostgreSQL within about a second, and a replica's idle polling costs a few ms of CPU a
 * second (each poll wakes the process; docs/performance.md, "Ledger").
 */
const IDLE_POLL_MS = 1_000;
/** After a failure (PostgreSQL or Redis down), waits double from 0.5 s up to 30 s. */
const BACKOFF_MS = { first: 500, max: 30_000 };
/** Partitions ahead and retention: once at start, then this often. */
const MAINTENANCE_MS = 60 * 60_000;
/** What a shutdown spends writing what is queued, at most. */
const FLUSH_MS = 5_000;
/** Within it, the wait before writing again while the embedded ledger's worker is being re-created. */
const FLUSH_RETRY_MS = 250;
/**
 * LEDGER_DRAIN=false: the backlog is still measured this often, so that the LedgerBacklog
 * alert fires from the inquiry replicas too when no drainer runs at all.
 */
const WATCH_MS = 5_000;

/**
 * Every replica's drainer, or only the drainer Deployment's (docs/architecture.md, "The
 * ledger"): turns overdue duties into `unknown` entries, reads batches from the queue, writes
 * them to PostgreSQL (ON CONFLICT DO NOTHING: exactly once by trackId and kind, whoever
 * writes; an entry the database refuses is parked, entry-writer.ts), then acknowledges them.
 * While PostgreSQL is down the entries wait in the queue; inquiries go on. With LEDGER_DRAIN=false (the drainer Deployment writes instead) it only
 * watches the backlog.
 */
@Injectable()
export class LedgerDrainer implements OnApplicationBootstrap {
  private readonly logger = new Logger('LedgerDrainer');
  private readonly retention: { entriesDays: number; resultsDays: number };
  /** LEDGER_DRAIN: false leaves the writing to other processes (ledger-config.ts). */
  private readonly drains: boolean;
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly pause = new WakeablePause();
  private nextMaintenance = 0;
  private failing = false;
  private claimFailing = false;
  private readonly writer: EntryWriter;

  constructor(
    config: ConfigService<AppConfig, true>,
    private readonly db: LedgerDatabase,
    private readonly queue: LedgerQueue,
    private readonly store: LedgerStore,
    private readonly metrics: LedgerMetrics,
  ) {
    const ledger = config.get('ledger', { infer: true });
    this.retention = { entriesDays: ledger.retentionDays, resultsDays: ledger.resultRetentionDays };
    this.drains = ledger.drain;
    this.writer = new EntryWriter(store, new ParkedEntries(store));
  }

  onApplicationBootstrap(): void {
    if (!this.drains) this.logger.log("LEDGER_DRAIN=false: the ledger drainers write this replica's entries");
    this.loop = this.drains ? this.run() : this.watch();
  }

  /**
   * The ledger's part of shutdown: stops the loop, then writes what is queued for up to 5 s
   * (what is left waits in Redis for another replica; in-process mode loses it with the
   * records). Idempotent.
   */
  async stop(): Promise<void> {
    if (this.stopping) return this.loop;
    this.stopping = true;
    this.pause.end();
    await this.loop;
    const until = Date.now() + FLUSH_MS;
    while (this.drains && Date.now() < until) {
      const written = await this.drainOnce().catch(() => -1);
      if (written === 0) break;
      // The embedded ledger's worker being re-created mends within seconds: made now (not after a
      // crash loop's backoff, up to 30 s) and tried again while the flush has time
      // (test/ledger-worker-crash.e2e.spec.ts). A server's outage is not waited for.
      if (written < 0 && this.db.outage === null) break;
      if (written < 0) {
        this.db.recoverNow();
        await delay(FLUSH_RETRY_MS);
      }
    }
    await this.db.close().catch(() => undefined);
  }

  /** One batch: overdue duties claimed, entries read, written and acknowledged; how many were read. */
  async drainOnce(): Promise<number> {
    // Redis first, in one write (the commands of one turn leave together, store/write-batching.ts,
    // and Redis runs them in order): overdue duties become entries, the backlog is measured even
    // while PostgreSQL is down (the metrics the alert reads), a batch is read. One round trip per
    // idle poll instead of six: 12.5 → 3 ms of CPU a second (docs/performance.md, "Ledger").
    const [claimed, observed, read] = await Promise.allSettled([
      this.queue.claimOverdue(Date.now(), DRAIN_BATCH),
      this.observeBacklog(),
      this.queue.read(DRAIN_BATCH),
    ]);
    if (read.status === 'rejected') throw read.reason;
    // The batch is written even when the claim fails: Redis out of memory refuses the claim's
    // XADD, and only writing and acknowledging entries frees memory. Logged once per spell.
    const sideFailure = [claimed, observed].find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (sideFailure && !this.claimFailing) {
      this.logger.warn(`overdue ledger duties not claimed: ${errorMessage(sideFailure.reason)}`);
    }
    this.claimFailing = sideFailure !== undefined;
    const batch = read.value;
    if (Date.now() >= this.nextMaintenance) await this.maintain();
    if (batch.length > 0) {
      // Written or parked, every one: only then acknowledged (a throw leaves the batch queued).
      const { parked } = await this.writer.write(batch.map((message) => message.entry));
      await this.queue.ack(batch.map((message) => message.id));
      const refused = new Set(parked.map((p) => p.entry));
      const byKind = new Map<string, number>();
      for (const { entry } of batch) {
        if (!refused.has(entry)) byKind.set(entry.kind, (byKind.get(entry.kind) ?? 0) + 1);
      }
      for (const [kind, written] of byKind) this.metrics.entriesWritten.inc({ kind }, written);
      if (parked.length > 0) this.noteParked(parked);
      await this.observeBacklog();
    }
    return batch.length;
  }

  /** One line per batch: the trackId and SQLSTATE of the first (never the message: it may quote a value). */
  private noteParked(parked: ParkedEntry[]): void {
    this.metrics.entriesParked.inc(parked.length);
    const [first] = parked;
    this.logger.error(
      `${parked.length} ledger entr${parked.length === 1 ? 'y' : 'ies'} refused by the database, parked ` +
        `(first: trackId ${storableText(first.entry.trackId)?.slice(0, 64)}, SQLSTATE ${first.refusal.code}); ` +
        'GET /admin/ledger/parked shows them (docs/runbooks.md, LedgerEntriesParked)',
    );
  }

  private async observeBacklog(): Promise<void> {
    const backlog = await this.queue.backlog(Date.now());
    this.metrics.queueDepth.set(backlog.depth);
    this.metrics.queueOldestAge.set(backlog.oldestAgeSeconds);
  }

  /** Partitions for this month and the next two; partitions and refusal counts past the retentions dropped. */
  private async maintain(): Promise<void> {
    await this.store.ready();
    const now = new Date();
    await ensurePartitions(
      this.db,
      [0, 1, 2].map((offset) => monthStart(now, offset)),
    );
    const dropped = await dropExpiredPartitions(this.db, now, this.retention);
    if (dropped.length > 0) this.logger.log(`retention dropped ledger partitions: ${dropped.join(', ')}`);
    const refusalRows = await dropExpiredRefusals(this.db, now, this.retention.entriesDays);
    if (refusalRows > 0) this.logger.log(`retention dropped ${refusalRows} refusal count rows`);
    this.nextMaintenance = Date.now() + MAINTENANCE_MS;
  }

  private async run(): Promise<void> {
    let backoff = BACKOFF_MS.first;
    while (!this.stopping) {
      try {
        const read = await this.drainOnce();
        if (this.failing) this.logger.log('ledger writes resumed');
        this.failing = false;
        backoff = BACKOFF_MS.first;
        if (read < DRAIN_BATCH) await this.pause.for(IDLE_POLL_MS);
      } catch (error) {
        this.metrics.writeFailures.inc();
        if (!this.failing) {
          // Once per outage: the entries wait in the queue (docs/operations.md, "Ledger").
          this.logger.warn(`ledger entries wait in the queue: ${errorMessage(error)}`);
        }
        this.failing = true;
        await this.pause.for(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MS.max);
      }
    }
  }

  /**
   * LEDGER_DRAIN=false: the backlog's metrics only. A failed look is logged once per spell (the
   * gauges keep their last value meanwhile; Redis's own metrics and readiness show why).
   */
  private async watch(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.observeBacklog();
        this.failing = false;
      } catch (error) {
        if (!this.failing) this.logger.warn(`ledger backlog not measured: ${errorMessage(error)}`);
        this.failing = true;
      }
      await this.pause.for(WATCH_MS);
    }
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : 'error';
}
