import { Inject, Injectable, Optional, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { AppConfig, StoreConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { instrumentRedis } from '../observability/redis-instrumentation.js';
import { RedisKeys } from './redis-keys.js';

export type RedisClient = Redis | Cluster;

/**
 * Options shared by every connection. Commands fail fast while Redis is down (no offline
 * queue, one retry): a request must learn at once that its inquiry cannot be recorded
 * (503 store_unavailable) rather than wait. Reconnection goes on in the background.
 */
const CLIENT_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: 2000,
  connectTimeout: 2000,
  retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
  lazyConnect: true,
};

function createClient(store: Exclude<StoreConfig, { mode: 'memory' }>, connectionName: string): RedisClient {
  const options = { ...CLIENT_OPTIONS, connectionName };
  switch (store.mode) {
    case 'standalone':
      return new Redis(store.url, options);
    case 'sentinel':
      return new Redis({ ...options, sentinels: store.sentinels, name: store.name });
    case 'cluster':
      return new Cluster(store.nodes, { redisOptions: options, enableOfflineQueue: false, lazyConnect: true });
  }
}

/**
 * The Redis connections of one gateway process (a command connection and a subscriber),
 * or none when no Redis is configured and the in-process stores serve a single replica.
 */
@Injectable()
export class RedisConnection implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  readonly keys: RedisKeys;
  readonly client: RedisClient | null;
  readonly subscriber: RedisClient | null;

  constructor(
    @Inject(ConfigService) config: ConfigService<AppConfig, true>,
    @Optional() @Inject(GatewayMetrics) metrics?: GatewayMetrics,
  ) {
    const store = config.get('store', { infer: true });
    this.keys = new RedisKeys(store.keyPrefix);
    if (store.mode === 'memory') {
      this.client = null;
      this.subscriber = null;
      this.logger.warn('no Redis configured: using the in-process store, fit for ONE replica only');
      return;
    }
    this.client = createClient(store, 'vgw-commands');
    this.subscriber = createClient(store, 'vgw-subscriber');
    if (metrics) for (const client of [this.client, this.subscriber]) instrumentRedis(client, metrics);
    for (const [name, client] of [
      ['commands', this.client],
      ['subscriber', this.subscriber],
    ] as const) {
      // Without a listener ioredis prints every reconnect error; one line per state change is enough.
      client.on('error', (error: Error) => this.logger.debug(`${name} connection error: ${error.message}`));
      client.on('ready', () => this.logger.log(`${name} connection ready`));
      client.on('end', () => this.logger.debug(`${name} connection ended`));
    }
  }

  /**
   * Connects before the application starts serving, so the first token acquisition is
   * shared through Redis instead of each replica falling back to its own. If Redis is not
   * there yet, startup goes on (readiness reports it) and ioredis keeps reconnecting.
   */
  async onModuleInit(): Promise<void> {
    await Promise.all(
      [
        ['commands', this.client],
        ['subscriber', this.subscriber],
      ].map(async ([name, client]) => {
        if (!client || typeof client === 'string') return;
        try {
          await client.connect();
        } catch (error) {
          this.logger.warn(`${name} connection failed: ${(error as Error).message}; retrying in the background`);
        }
      }),
    );
  }

  get isConfigured(): boolean {
    return this.client !== null;
  }

  /** Readiness: true without Redis (nothing to reach) or when a PING answers. */
  async isReachable(): Promise<boolean> {
    if (!this.client) return true;
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(
      [this.client, this.subscriber].map(async (client) => {
        if (!client) return;
        try {
          await client.quit();
        } catch {
          client.disconnect();
        }
      }),
    );
  }
}
