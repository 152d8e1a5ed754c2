import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisConnection } from './redis-connection.js';
import { StoreHealthIndicator } from './store.health.js';

@Module({
  imports: [TerminusModule],
  providers: [RedisConnection, StoreHealthIndicator],
  exports: [RedisConnection, StoreHealthIndicator],
})
export class StoreModule {}
