import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { TerminusModule } from '@nestjs/terminus';
import { RedisConnection } from './redis-connection.js';
import { StoreCipher } from './store-cipher.js';
import { StoreHealthIndicator } from './store.health.js';

@Module({
  imports: [TerminusModule],
  providers: [
    RedisConnection,
    StoreHealthIndicator,
    {
      provide: StoreCipher,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>) => StoreCipher.fromConfig(config),
    },
  ],
  exports: [RedisConnection, StoreHealthIndicator, StoreCipher],
})
export class StoreModule {}
