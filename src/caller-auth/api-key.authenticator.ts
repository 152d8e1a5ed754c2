import { timingSafeEqual } from 'node:crypto';
import { Injectable, Logger, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig, ApiKeyEntry } from '../config/app-config.js';
import { parseApiKeys } from '../config/caller-config.js';
import { SecretFileWatcher } from '../config/secret-file-watcher.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { knownSecrets } from '../config/known-secrets.js';
import { AUTH_REALM, type Caller, type CallerAuthenticator } from './caller.js';
import { API_KEY_HEADER_IN } from '../vocabulary/headers.js';
import { sha256Bytes } from '../crypto/sha256.js';

/**
 * `X-Api-Key` for services in the cluster (docs/api.md §1): the key's SHA-256 is
 * compared with every configured hash in constant time, so neither the match position
 * nor the number of matching bytes shows in the response time.
 */
@Injectable()
export class ApiKeyAuthenticator implements CallerAuthenticator, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('ApiKeys');
  private entries: Array<ApiKeyEntry & { hash: Buffer }>;
  private readonly watcher: SecretFileWatcher | null = null;

  constructor(config: ConfigService<AppConfig, true>, @Optional() metrics?: GatewayMetrics) {
    const callers = config.get('callers', { infer: true });
    const operations = config.get('operations', { infer: true }).map((operation) => operation.name);
    this.entries = hashed(callers.apiKeys);
    // API_KEYS_FILE is re-read while running: a key added to the Secret works, a removed one
    // stops working, within SECRET_FILES_POLL_MS, without a restart.
    const { apiKeys: path, pollIntervalMs } = config.get('secretFiles', { infer: true }) ?? { pollIntervalMs: 0 };
    if (path) {
      this.watcher = new SecretFileWatcher({
        variable: 'API_KEYS_FILE',
        path,
        intervalMs: pollIntervalMs,
        logger: this.logger,
        registry: metrics?.registry,
        apply: (content) => {
          const problems: string[] = [];
          const entries = parseApiKeys(content, operations, problems);
          if (problems.length === 0 && entries.length === 0 && !callers.jwt) {
            problems.push('API_KEYS: no key left and no JWT configured: every caller would be refused');
          }
          if (problems.length === 0) this.entries = hashed(entries);
          return problems;
        },
      });
    }
  }

  onModuleInit(): void {
    this.watcher?.start();
  }

  onModuleDestroy(): void {
    this.watcher?.stop();
  }

  /** Not a registered scheme: names the header the key goes in, so a client can tell what to send. */
  challenge(): string {
    return `ApiKey realm="${AUTH_REALM}", header="X-Api-Key"`;
  }

  appliesTo(headers: Record<string, string | string[] | undefined>): boolean {
    return headers[API_KEY_HEADER_IN] !== undefined;
  }

  /** Nothing to wait for here; the interface is asynchronous for the JWT authenticator's JWKS. */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null> {
    return Promise.resolve(this.identify(headers));
  }

  private identify(headers: Record<string, string | string[] | undefined>): Caller | null {
    const key = headers[API_KEY_HEADER_IN];
    if (typeof key !== 'string' || key.length === 0 || key.length > 512) return null;
    const presented = sha256Bytes(key);
    let match: ApiKeyEntry | null = null;
    for (const entry of this.entries) {
      // No early exit: every entry is compared.
      if (timingSafeEqual(presented, entry.hash) && match === null) match = entry;
    }
    if (!match) return null;
    // From now on this raw key is scrubbed from any log line or error that might echo it.
    knownSecrets.add('api_key', key);
    return {
      clientId: match.clientId,
      scopes: new Set(match.scopes),
      credential: 'api_key',
      quotaPerMinute: match.quotaPerMinute,
    };
  }
}

function hashed(entries: ApiKeyEntry[]): Array<ApiKeyEntry & { hash: Buffer }> {
  return entries.map((entry) => ({ ...entry, hash: Buffer.from(entry.keySha256, 'hex') }));
}
