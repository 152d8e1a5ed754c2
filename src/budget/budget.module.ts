import { Module } from '@nestjs/common';
import { CallerAuthModule } from '../caller-auth/caller-auth.module.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { BudgetController } from './budget.controller.js';
import { BudgetStore, MemoryBudgetStore } from './budget.store.js';
import { Budgets } from './budgets.js';
import { RedisBudgetStore } from './redis-budget.store.js';

/** Spend budgets (docs/api.md §6, "Budgets"); `InquiryPrices` comes from the global AccountingModule. */
@Module({
  imports: [CallerAuthModule, StoreModule],
  controllers: [BudgetController],
  providers: [
    {
      provide: BudgetStore,
      inject: [RedisConnection],
      useFactory: (redis: RedisConnection): BudgetStore =>
        redis.client ? new RedisBudgetStore(redis.client, redis.keys) : new MemoryBudgetStore(),
    },
    Budgets,
  ],
  // The store too: the ledger's queue reserves and settles with the inquiry's duty and entry.
  exports: [Budgets, BudgetStore],
})
export class BudgetModule {}
