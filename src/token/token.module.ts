import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { StoreCipher } from '../store/store-cipher.js';
import { RedisConnection } from '../store/redis-connection.js';
import { StoreModule } from '../store/store.module.js';
import { UpstreamModule } from '../upstream/upstream.module.js';
import { AuthorizedUpstream } from './authorized-upstream.js';
import { MemoryTokenStore } from './memory-token.store.js';
import { RedisTokenStore } from './redis-token.store.js';
import { FirstTokenAttemptIndicator } from './token.health.js';
import { TokenProvider } from './token.provider.js';
import { TokenStore } from './token.store.js';

@Module({
  imports: [StoreModule, TerminusModule, UpstreamModule],
  providers: [
    {
      provide: TokenStore,
      inject: [RedisConnection, StoreCipher],
      useFactory: (redis: RedisConnection, cipher: StoreCipher): TokenStore =>
        redis.client && redis.subscriber
          ? new RedisTokenStore(redis.client, redis.subscriber, redis.keys, cipher)
          : new MemoryTokenStore(),
    },
    TokenProvider,
    AuthorizedUpstream,
    FirstTokenAttemptIndicator,
  ],
  exports: [TokenProvider, AuthorizedUpstream, FirstTokenAttemptIndicator],
})
export class TokenModule {}
