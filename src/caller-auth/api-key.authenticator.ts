import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig, ApiKeyEntry } from '../config/app-config.js';
import { knownSecrets } from '../observability/known-secrets.js';
import type { Caller, CallerAuthenticator } from './caller.js';

export const API_KEY_HEADER = 'x-api-key';

/**
 * `X-Api-Key` for services in the cluster (internal-api.md §1): the key's SHA-256 is
 * compared with every configured hash in constant time, so neither the match position
 * nor the number of matching bytes shows in the response time.
 */
@Injectable()
export class ApiKeyAuthenticator implements CallerAuthenticator {
  private readonly entries: Array<ApiKeyEntry & { hash: Buffer }>;

  constructor(config: ConfigService<AppConfig, true>) {
    this.entries = config
      .get('callers', { infer: true })
      .apiKeys.map((entry) => ({ ...entry, hash: Buffer.from(entry.keySha256, 'hex') }));
  }

  appliesTo(headers: Record<string, string | string[] | undefined>): boolean {
    return headers[API_KEY_HEADER] !== undefined;
  }

  /** Nothing to wait for here; the interface is asynchronous for the JWT authenticator's JWKS. */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null> {
    return Promise.resolve(this.identify(headers));
  }

  private identify(headers: Record<string, string | string[] | undefined>): Caller | null {
    const key = headers[API_KEY_HEADER];
    if (typeof key !== 'string' || key.length === 0 || key.length > 512) return null;
    const presented = createHash('sha256').update(key).digest();
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
