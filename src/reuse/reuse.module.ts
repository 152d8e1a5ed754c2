import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { LedgerStore } from '../ledger/ledger.store.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreCipher } from '../store/store-cipher.js';
import { StoreModule } from '../store/store.module.js';
import { AnswerStore } from './answer-store.js';
import { MemoryAnswerStore } from './memory-answer.store.js';
import { RedisAnswerStore } from './redis-answer.store.js';
import { SqlAnswerStore } from './sql-answer.store.js';
import { ReuseCounters } from './reuse-counters.js';
import { ReuseQuestions } from './reuse-key.js';

/**
 * The parts of answer reuse (docs/api.md §2, "Reusing answers"; decision 0014): the question
 * keys, the answer store with its registry of inquiries in flight (Redis when configured, else
 * the embedded ledger's PGlite without Redis, as the records; in process only beside a
 * ledger server without Redis, as the records), and the metrics. The inquiry path plugs them in.
 */
@Module({
  imports: [StoreModule, LedgerModule],
  providers: [
    {
      provide: AnswerStore,
      inject: [RedisConnection, StoreCipher, LedgerStore],
      useFactory: (redis: RedisConnection, cipher: StoreCipher, books: LedgerStore): AnswerStore =>
        redis.client
          ? new RedisAnswerStore(redis.client, redis.keys, cipher)
          : books.db.embedded
            ? new SqlAnswerStore(books, cipher)
            : new MemoryAnswerStore(),
    },
    ReuseQuestions,
    ReuseCounters,
  ],
  exports: [AnswerStore, ReuseQuestions, ReuseCounters],
})
export class ReuseModule {}
