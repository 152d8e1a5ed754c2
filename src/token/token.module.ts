import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import type { AppConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { StoreCipher } from '../store/store-cipher.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
import { UpstreamModule } from '../upstream/upstream.module.js';
import { AuthorizedUpstream } from './authorized-upstream.js';
import { Clock, SystemClock } from './clock.js';
import { MemoryTokenStore } from './memory-token.store.js';
import { RedisTokenStore } from './redis-token.store.js';
import { FirstTokenAttemptIndicator } from './token.health.js';
import { TokenProvider } from './token.provider.js';
import { TokenRenewal, renewalTiming } from './token-renewal.js';
import { TokenStore } from './token.store.js';

@Module({
  imports: [StoreModule, TerminusModule, UpstreamModule],
  providers: [
    { provide: Clock, useClass: SystemClock },
    {
      provide: TokenStore,
      inject: [RedisConnection, StoreCipher, Clock],
      useFactory: (redis: RedisConnection, cipher: StoreCipher, clock: Clock): TokenStore =>
        redis.client && redis.subscriber
          ? new RedisTokenStore(redis.client, redis.subscriber, redis.keys, cipher)
          : new MemoryTokenStore(clock),
    },
    {
      provide: TokenRenewal,
      inject: [TokenStore, UpstreamClient, GatewayMetrics, Clock, ConfigService],
      useFactory: (
        store: TokenStore,
        upstream: UpstreamClient,
        metrics: GatewayMetrics,
        clock: Clock,
        config: ConfigService<AppConfig, true>,
      ) =>
        new TokenRenewal(
          store,
          upstream,
          metrics,
          clock,
          renewalTiming(config.get('token', { infer: true }), config.get('upstream', { infer: true })),
        ),
    },
    TokenProvider,
    AuthorizedUpstream,
    FirstTokenAttemptIndicator,
  ],
  exports: [TokenProvider, AuthorizedUpstream, FirstTokenAttemptIndicator],
})
export class TokenModule {}
