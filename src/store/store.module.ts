import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisConnection } from './redis-connection.js';
import { StoreCipher } from './store-cipher.js';
import { StoreHealthIndicator } from './store.health.js';

@Module({
  imports: [TerminusModule],
  providers: [RedisConnection, StoreHealthIndicator, StoreCipher],
  exports: [RedisConnection, StoreHealthIndicator, StoreCipher],
})
export class StoreModule {}
