import { Inject, Injectable, Optional, Logger, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { AppConfig, RedisTls, StoreConfig } from '../config/app-config.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { instrumentRedis } from '../observability/redis-instrumentation.js';
import { RedisKeys } from './redis-keys.js';
import { batchWritesPerLoopTurn } from './write-batching.js';

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
  // No auto-pipelining: with it, a command that ends by `commandTimeout` inside an automatic
  // pipeline can make ioredis's own callback throw (`results[i] is not iterable`, in a
  // nextTick: an uncaught exception) when Redis is slow; seen under CI load. Commands are
  // still sent together, by write-batching.ts, which leaves ioredis's bookkeeping alone.
  enableAutoPipelining: false,
};

type RedisStore = Exclude<StoreConfig, { mode: 'memory' }>;

/** ioredis TLS options from the configuration (PEM contents, read at startup). */
function tlsOptions(tls: RedisTls): ConnectionOptions {
  return { ca: tls.ca, cert: tls.cert, key: tls.key?.reveal() };
}

function createClient(store: RedisStore, connectionName: string): RedisClient {
  // Credentials of the data nodes: an ACL user, or the `default` user when only a password is set.
  const options: RedisOptions = {
    ...CLIENT_OPTIONS,
    connectionName,
    username: store.auth.username,
    password: store.auth.password?.reveal(),
    ...(store.tls ? { tls: tlsOptions(store.tls) } : {}),
  };
  switch (store.mode) {
    case 'standalone':
      return new Redis(store.url, options);
    case 'sentinel':
      return new Redis({
        ...options,
        sentinels: store.sentinels,
        name: store.name,
        sentinelUsername: store.sentinelAuth.username,
        sentinelPassword: store.sentinelAuth.password?.reveal(),
        // With TLS, the Sentinels are reached over TLS too, with the same CA and client certificate.
        ...(store.tls ? { enableTLSForSentinelMode: true, sentinelTLS: tlsOptions(store.tls) } : {}),
        sentinelRetryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
      });
    case 'cluster':
      return new Cluster(store.nodes, {
        redisOptions: options,
        enableOfflineQueue: false,
        lazyConnect: true,
        enableAutoPipelining: false,
        clusterRetryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
      });
  }
}

/**
 * Errors that no reconnection will cure: the credentials or the TLS setup are wrong. They are
 * logged as errors, once per distinct cause, so the reason a pod stays unready is in its log
 * (readiness answers 503 meanwhile; the process keeps running and keeps retrying, so a
 * corrected Secret or Redis ACL is picked up without a restart loop).
 */
const CONFIGURATION_ERROR =
  /WRONGPASS|NOAUTH|NOPERM|invalid password|invalid username|certificate|self[- ]signed|unable to (get|verify)|ERR_TLS|SSL|handshake|EPROTO/i;

/**
 * The Redis connections of one gateway process (a command connection and a subscriber),
 * or none when no Redis is configured and the in-process stores serve a single replica.
 */
@Injectable()
export class RedisConnection implements OnModuleInit {
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
    // A Cluster keeps one connection per node, created internally: its commands are not batched.
    if (this.client instanceof Redis) batchWritesPerLoopTurn(this.client);
    if (metrics)
      for (const client of [this.client, this.subscriber])
        instrumentRedis(client, metrics, { traced: config.get('tracing', { infer: true }).enabled });
    for (const [name, client] of [
      ['commands', this.client],
      ['subscriber', this.subscriber],
    ] as const) {
      // Without a listener ioredis prints every reconnect error; one line per state change is enough.
      let reported: string | null = null;
      client.on('error', (error: Error) => {
        const message = describeRedisError(error);
        if (CONFIGURATION_ERROR.test(message) && reported !== message) {
          reported = message;
          this.logger.error(
            `${name} connection refused by Redis: ${message}. Check ${credentialVariables(store)}; ` +
              'readiness stays 503 and the connection is retried until this is fixed',
          );
        } else {
          this.logger.debug(`${name} connection error: ${message}`);
        }
      });
      client.on('ready', () => {
        reported = null;
        this.logger.log(`${name} connection ready`);
      });
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
      (
        [
          ['commands', this.client],
          ['subscriber', this.subscriber],
        ] as const
      ).map(async ([name, client]) => {
        if (!client) return;
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

  /** The last step of the shutdown sequence (src/http/shutdown-sequence.ts): nothing writes after it. */
  async close(): Promise<void> {
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

/** The message of an ioredis error, with the cause of a wrapped one (Cluster, Sentinel) appended. */
function describeRedisError(error: Error & { lastNodeError?: Error; cause?: unknown }): string {
  const inner = error.lastNodeError ?? (error.cause instanceof Error ? error.cause : undefined);
  return inner ? `${error.message} (${inner.message})` : error.message;
}

/** The variables an operator checks when Redis refuses the connection, for the log line. */
function credentialVariables(store: RedisStore): string {
  const names = ['REDIS_USERNAME', 'REDIS_PASSWORD(_FILE)'];
  if (store.mode === 'standalone') names.unshift('the credentials in REDIS_URL');
  if (store.mode === 'sentinel') names.push('REDIS_SENTINEL_PASSWORD(_FILE)');
  names.push('REDIS_TLS', 'REDIS_TLS_CA_FILE', 'REDIS_TLS_CERT_FILE', 'REDIS_TLS_KEY_FILE');
  return names.join(', ');
}
