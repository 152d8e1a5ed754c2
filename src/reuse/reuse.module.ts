import { Module } from '@nestjs/common';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreCipher } from '../store/store-cipher.js';
import { StoreModule } from '../store/store.module.js';
import { AnswerStore } from './answer-store.js';
import { MemoryAnswerStore } from './memory-answer.store.js';
import { RedisAnswerStore } from './redis-answer.store.js';
import { ReuseCounters } from './reuse-counters.js';
import { ReuseQuestions } from './reuse-key.js';

/**
 * The parts of answer reuse (docs/api.md §2, "Reusing answers"; decision 0014): the question
 * keys, the answer store with its registry of inquiries in flight (Redis when configured, else
 * in process, as the other stores), and the metrics. The inquiry path plugs them in.
 */
@Module({
  imports: [StoreModule],
  providers: [
    {
      provide: AnswerStore,
      inject: [RedisConnection, StoreCipher],
      useFactory: (redis: RedisConnection, cipher: StoreCipher): AnswerStore =>
        redis.client ? new RedisAnswerStore(redis.client, redis.keys, cipher) : new MemoryAnswerStore(),
    },
    ReuseQuestions,
    ReuseCounters,
  ],
  exports: [AnswerStore, ReuseQuestions, ReuseCounters],
})
export class ReuseModule {}
