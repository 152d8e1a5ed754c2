import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisConnection } from './redis-connection.js';

/**
 * Readiness of the record store (docs/api.md §4): the in-process store is always up;
 * Redis is up when a PING answers. A probe only reads: it updates no metric.
 */
@Injectable()
export class StoreHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisConnection,
  ) {}

  async isHealthy<const Key extends string>(key: Key) {
    const session = this.indicators.check(key);
    if (!this.redis.isConfigured) return session.up({ mode: 'memory' });
    return (await this.redis.isReachable())
      ? session.up({ mode: 'redis' })
      : session.down({ mode: 'redis', message: 'unreachable' });
  }
}
