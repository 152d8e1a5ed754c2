import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { LedgerStore } from '../ledger/ledger.store.js';
import { RESOLUTION_LISTENER, type ResolutionListener } from '../ledger/resolution-listener.js';
import { ResolutionMoves } from '../ledger/resolution-moves.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { TokenModule } from '../token/token.module.js';
import { TokenProvider } from '../token/token.provider.js';
import { QuestionLimiter } from './question-limiter.js';
import { Tracker } from './tracker.js';
import { TrackingBook } from './tracking-book.js';
import { TrackingMetrics } from './tracking-metrics.js';
import { TrackingQuestions } from './tracking-questions.js';

/** Outcomes learned from the provider (docs/api.md §8): the tracker, on every replica. */
@Module({
  imports: [LedgerModule, TokenModule, StoreModule],
  providers: [
    TrackingMetrics,
    {
      provide: Tracker,
      inject: [ConfigService, LedgerStore, RESOLUTION_LISTENER, TokenProvider, RedisConnection, TrackingMetrics],
      useFactory: (
        config: ConfigService<AppConfig, true>,
        store: LedgerStore,
        listener: ResolutionListener,
        tokens: TokenProvider,
        redis: RedisConnection,
        metrics: TrackingMetrics,
      ): Tracker => {
        const tracking = config.get('tracking', { infer: true });
        const asking = tracking && {
          config: tracking,
          questions: new TrackingQuestions(tracking, config.get('upstream', { infer: true }), tokens),
          limiter: new QuestionLimiter(tracking.perMinute, redis),
        };
        return new Tracker(asking, new TrackingBook(store), new ResolutionMoves(store, listener), metrics);
      },
    },
  ],
  exports: [Tracker],
})
export class TrackingModule {}
