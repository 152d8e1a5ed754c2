import { Injectable, type OnModuleInit } from '@nestjs/common';
import { GatewayMetrics } from '../observability/metrics.js';
import { RedisConnection } from '../store/redis-connection.js';
import { TokenProvider } from '../token/token.provider.js';

/**
 * Points the state gauges (vgw_store_up, vgw_token_expiry_seconds) at the state itself, read
 * at every scrape: a gauge updated only when something else happens to look (a readiness
 * probe, say) is wrong in between.
 */
@Injectable()
export class StateGauges implements OnModuleInit {
  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly redis: RedisConnection,
    private readonly tokens: TokenProvider,
  ) {}

  onModuleInit(): void {
    this.metrics.setProbes({
      // The connection's own state: no PING per scrape. The in-process store is always up.
      storeUp: () => this.redis.client === null || this.redis.client.status === 'ready',
      accessTokenExpiresAt: () => this.tokens.accessTokenExpiresAt,
    });
  }
}
