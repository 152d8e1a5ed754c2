import { Module } from '@nestjs/common';
import { BudgetModule } from '../budget/budget.module.js';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import { LedgerQueue } from '../ledger/ledger-queue.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { RedisLedgerQueue } from '../ledger/redis-ledger.queue.js';
import { StoreCipher } from '../store/store-cipher.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { TokenModule } from '../token/token.module.js';
import { IdempotencyService } from './idempotency.service.js';
import { InquiryController } from './inquiry.controller.js';
import { InquiryService } from './inquiry.service.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';
import { MemoryIdempotencyStore, MemoryInquiryStore } from './memory-inquiry.store.js';
import { RedisIdempotencyStore, RedisInquiryStore } from './redis-inquiry.store.js';
import { InquiryWaits } from './inquiry-waits.js';
import { MemorySettledNotices, RedisSettledNotices, SettledNotices } from './settled-notices.js';
import { SettleTimes } from './settle-times.js';
import { Settlements } from './settlements.js';

@Module({
  imports: [BudgetModule, CallerAuthModule, StoreModule, TokenModule, LedgerModule],
  controllers: [InquiryController],
  providers: [
    {
      provide: InquiryStore,
      inject: [RedisConnection, StoreCipher, LedgerQueue],
      useFactory: (redis: RedisConnection, cipher: StoreCipher, ledger: LedgerQueue): InquiryStore =>
        redis.client
          ? new RedisInquiryStore(
              redis.client,
              redis.keys,
              cipher,
              ledger instanceof RedisLedgerQueue ? ledger : undefined,
            )
          : new MemoryInquiryStore(),
    },
    {
      provide: IdempotencyStore,
      inject: [RedisConnection, StoreCipher],
      useFactory: (redis: RedisConnection, cipher: StoreCipher): IdempotencyStore =>
        redis.client ? new RedisIdempotencyStore(redis.client, redis.keys, cipher) : new MemoryIdempotencyStore(),
    },
    {
      provide: SettledNotices,
      inject: [RedisConnection],
      useFactory: (redis: RedisConnection): SettledNotices =>
        redis.client && redis.subscriber
          ? new RedisSettledNotices(redis.client, redis.subscriber, redis.keys)
          : new MemorySettledNotices(),
    },
    IdempotencyService,
    InquiryService,
    InquiryWaits,
    SettleTimes,
    Settlements,
  ],
})
export class InquiryModule {}
