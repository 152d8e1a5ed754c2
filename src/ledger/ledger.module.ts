import { Logger, Module } from '@nestjs/common';
import { EmbeddedLedgerFreezer } from './embedded-freeze.js';
import { ConfigService } from '@nestjs/config';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { AppConfig } from '../config/app-config.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreCipher } from '../store/store-cipher.js';
import { StoreModule } from '../store/store.module.js';
import { IN_MEMORY } from '../config/ledger-config.js';
import { LedgerDatabase, PgLedgerDatabase, PgliteLedgerDatabase } from './ledger-database.js';
import { LedgerStartup } from './ledger-startup.js';
import { LedgerDrainer } from './ledger-drainer.js';
import { LEDGER_STATUS, LedgerStatusReporter } from './ledger-status.js';
import { RESOLUTION_LISTENER, type ResolutionListener } from './resolution-listener.js';
import { BudgetModule } from '../budget/budget.module.js';
import { BudgetStore } from '../budget/budget.store.js';
import { Budgets } from '../budget/budgets.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LedgerQueue } from './ledger-queue.js';
import { LedgerReads } from './ledger-reads.js';
import { LedgerStore } from './ledger.store.js';
import { OperatorActionsController } from './operator-actions.controller.js';
import { AdminController, CsvBodies } from './admin.controller.js';
import { ConsoleReadsController } from './console-reads.controller.js';
import { ParkedActionsController } from './parked-actions.controller.js';
import { InquiryList } from './inquiry-list.js';
import { Reconciliations } from './reconciliation.js';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import { MemoryLedgerQueue } from './memory-ledger.queue.js';
import { RedisLedgerQueue } from './redis-ledger.queue.js';
import { RefusalTally } from '../caller-auth/refusal-tally.js';
import { addRefusals } from './ledger-refusals.js';
import { RefusalFlusher } from './refusal-flusher.js';

/** The ledger in PostgreSQL (docs/api.md §7): its queue, drainer, reads. */
@Module({
  imports: [StoreModule, CallerAuthModule, BudgetModule],
  controllers: [AdminController, ConsoleReadsController, OperatorActionsController, ParkedActionsController],
  providers: [
    CsvBodies,
    Reconciliations,
    {
      provide: LedgerDatabase,
      inject: [ConfigService, LedgerMetrics],
      useFactory: async (config: ConfigService<AppConfig, true>, metrics: LedgerMetrics): Promise<LedgerDatabase> => {
        const { databaseUrl, dataDir } = config.get('ledger', { infer: true });
        if (databaseUrl) return new PgLedgerDatabase(databaseUrl.reveal());
        new Logger('LedgerDatabase').warn(
          dataDir === IN_MEMORY
            ? 'LEDGER_DATABASE_URL unset and LEDGER_DATA_DIR=memory://: the ledger is an embedded PostgreSQL (PGlite) in memory, lost with the process, fit for one replica only'
            : `LEDGER_DATABASE_URL unset: the ledger is an embedded PostgreSQL (PGlite) in ${dataDir} (LEDGER_DATA_DIR), fit for one replica only`,
        );
        // The directory and its lock now (start fails while another process holds it); PGlite
        // opens in its worker meanwhile, and LedgerStartup migrates it before readiness.
        // A worker that dies later is re-created by the database itself; counted here.
        return PgliteLedgerDatabase.start(dataDir, { lost: () => metrics.workerRestarts.inc() });
      },
    },
    {
      provide: LedgerQueue,
      inject: [RedisConnection, StoreCipher, InquiryPrices, BudgetStore],
      useFactory: (
        redis: RedisConnection,
        cipher: StoreCipher,
        prices: InquiryPrices,
        budgets: BudgetStore,
      ): LedgerQueue =>
        redis.client
          ? new RedisLedgerQueue(redis.client, redis.keys, cipher, prices)
          : new MemoryLedgerQueue(prices, budgets, cipher.enabled),
    },
    {
      provide: LedgerStore,
      inject: [LedgerDatabase, StoreCipher, ConfigService],
      useFactory: (db: LedgerDatabase, cipher: StoreCipher, config: ConfigService<AppConfig, true>) =>
        // Roll-ups in BUDGET_TIMEZONE too: the trends' days (ledger-rollups.ts).
        new LedgerStore(db, cipher, config.get('ledger', { infer: true }).resultRetentionDays, [
          config.get('budgets', { infer: true }).timeZone,
        ]),
    },
    { provide: InquiryList, inject: [LedgerStore], useFactory: (store: LedgerStore) => new InquiryList(store) },
    // The refusals counted by the quotas and budgets, added to ledger_refusals (issue 35).
    {
      provide: RefusalFlusher,
      inject: [RefusalTally, LedgerStore, ConfigService],
      useFactory: (tally: RefusalTally, store: LedgerStore, config: ConfigService<AppConfig, true>) =>
        new RefusalFlusher(
          tally,
          async (counts) => {
            await store.ready();
            await addRefusals(store.db, counts);
          },
          config.get('ledger', { infer: true }).refusalFlushSeconds * 1000,
        ),
    },
    // The embedded ledger frozen before the transaction-id horizon (PGlite has no autovacuum).
    {
      provide: EmbeddedLedgerFreezer,
      inject: [LedgerStore],
      useFactory: (store: LedgerStore) => (store.db.embedded ? new EmbeddedLedgerFreezer(store) : null),
    },
    LedgerMetrics,
    LedgerStartup,
    LedgerDrainer,
    LedgerReads,
    { provide: LEDGER_STATUS, useClass: LedgerStatusReporter },
    // A reconciliation that resolves an `unknown` releases or confirms its budget units (docs/api.md §6).
    {
      provide: RESOLUTION_LISTENER,
      inject: [Budgets],
      useFactory: (budgets: Budgets): ResolutionListener => ({
        resolved: (resolution) => budgets.resolveUnknown(resolution),
      }),
    },
  ],
  exports: [
    LedgerQueue,
    LedgerReads,
    LedgerStore,
    LedgerMetrics,
    LedgerDrainer,
    LedgerStartup,
    LEDGER_STATUS,
    RefusalFlusher,
    RESOLUTION_LISTENER,
  ],
})
export class LedgerModule {}
