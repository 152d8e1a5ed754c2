import { Logger, Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { BudgetModule } from '../budget/budget.module.js';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import type { AppConfig } from '../config/app-config.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { LedgerQueue } from '../ledger/ledger-queue.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { LedgerStore } from '../ledger/ledger.store.js';
import { RedisLedgerQueue } from '../ledger/redis-ledger.queue.js';
import { StoreCipher } from '../store/store-cipher.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { ExpiredRowSweeper, SweeperLifecycle } from '../store/sql-records.js';
import { ReuseModule } from '../reuse/reuse.module.js';
import { TokenModule } from '../token/token.module.js';
import { AnswerKeeping } from './answer-keeping.js';
import { AsyncAnswers } from './async-answers.js';
import { IdempotencyService } from './idempotency.service.js';
import { BooksBesideRecord, BooksInRecordScript, InquiryBooks } from './inquiry-books.js';
import { InquiryCall } from './inquiry-call.js';
import { InquiryController } from './inquiry.controller.js';
import { KnownOperationGuard, OperationCatalog } from './operation-catalog.js';
import { InquiryOpening } from './inquiry-opening.js';
import { InquiryReads } from './inquiry-reads.js';
import { InquiryService } from './inquiry.service.js';
import { InquirySettlement } from './inquiry-settlement.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';
import { KeyClaim } from './key-claim.js';
import { LeaderWait } from './leader-wait.js';
import { MemoryIdempotencyStore, MemoryInquiryStore } from './memory-inquiry.store.js';
import { RedisIdempotencyStore, RedisInquiryStore } from './redis-inquiry.store.js';
import { SqlIdempotencyStore, SqlInquiryStore } from './sql-inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';
import { ReuseStep } from './reuse-step.js';
import { ReusedAnswers } from './reused-answers.js';
import { RunningInquiries } from './running-inquiries.js';
import { MemorySettledNotices, RedisSettledNotices, SettledNotices } from './settled-notices.js';
import { SettleTimes } from './settle-times.js';
import { Settlements } from './settlements.js';
import { subjectHasherFrom } from './subject-pseudonyms.js';
import { UpstreamCall } from './upstream-call.js';

@Module({
  imports: [BudgetModule, CallerAuthModule, StoreModule, TokenModule, LedgerModule, ReuseModule],
  controllers: [InquiryController],
  providers: [
    OperationCatalog,
    KnownOperationGuard,
    {
      provide: InquiryStore,
      inject: [RedisConnection, StoreCipher, LedgerQueue, LedgerStore],
      useFactory: (
        redis: RedisConnection,
        cipher: StoreCipher,
        ledger: LedgerQueue,
        books: LedgerStore,
      ): InquiryStore =>
        redis.client
          ? new RedisInquiryStore(
              redis.client,
              redis.keys,
              cipher,
              ledger instanceof RedisLedgerQueue ? ledger : undefined,
            )
          : books.db.embedded
            ? new SqlInquiryStore(books, cipher)
            : new MemoryInquiryStore(),
    },
    {
      // Decided here, once: whether the ledger's duty and the budget ride the record's own
      // script (the store says whether it can) or go beside it.
      provide: InquiryBooks,
      inject: [InquiryStore, LedgerQueue],
      useFactory: (records: InquiryStore, ledger: LedgerQueue): InquiryBooks =>
        records.accountsWithRecord ? new BooksInRecordScript(records, ledger) : new BooksBesideRecord(records, ledger),
    },
    {
      provide: IdempotencyStore,
      inject: [RedisConnection, StoreCipher, LedgerStore],
      useFactory: (redis: RedisConnection, cipher: StoreCipher, books: LedgerStore): IdempotencyStore => {
        if (redis.client) return new RedisIdempotencyStore(redis.client, redis.keys, cipher);
        const logger = new Logger('RecordStore');
        if (books.db.embedded) {
          logger.log(
            "REDIS_URL unset: the records, Idempotency-Keys and reuse answers are kept in the embedded ledger's PGlite (LEDGER_DATA_DIR), bounded by its disk",
          );
          return new SqlIdempotencyStore(books, cipher);
        }
        // Beside a ledger server without Redis (docs/operations.md, "Deploying"): one replica, in memory.
        logger.warn(
          'REDIS_URL unset with LEDGER_DATABASE_URL: the records and Idempotency-Keys are kept in this process, lost with it',
        );
        return new MemoryIdempotencyStore();
      },
    },
    {
      // Without Redis, the single-node records' expired rows are deleted now and then.
      provide: SweeperLifecycle,
      inject: [RedisConnection, LedgerStore],
      useFactory: (redis: RedisConnection, books: LedgerStore) =>
        new SweeperLifecycle(!redis.client && books.db.embedded ? new ExpiredRowSweeper(books) : null),
    },
    {
      provide: SettledNotices,
      inject: [RedisConnection],
      useFactory: (redis: RedisConnection): SettledNotices =>
        redis.client && redis.subscriber
          ? new RedisSettledNotices(redis.client, redis.subscriber, redis.keys)
          : new MemorySettledNotices(),
    },
    {
      provide: SubjectHasher,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): SubjectHasher => subjectHasherFrom(config),
    },
    // The inquiry's steps (InquiryService), its reads, and what they share.
    InquiryService,
    KeyClaim,
    ReuseStep,
    LeaderWait,
    ReusedAnswers,
    InquiryOpening,
    InquiryCall,
    UpstreamCall,
    AnswerKeeping,
    InquirySettlement,
    AsyncAnswers,
    RunningInquiries,
    InquiryReads,
    IdempotencyService,
    InquiryWaits,
    SettleTimes,
    Settlements,
  ],
})
export class InquiryModule {}
