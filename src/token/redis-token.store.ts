import { createHash } from 'node:crypto';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { TokenRecord } from './token-record.js';
import { TokenStore, type RenewalBackoff } from './token.store.js';
import { TOKEN_FAILURE_REASONS as FAILURE_REASONS, type TokenFailureReason } from './token-unavailable.error.js';

/** Compare-and-delete, so a renewal that outlived its lock cannot free a successor's lock. */
const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * Write the renewed record only while the caller holds the lock and nobody wrote a newer
 * generation meanwhile. KEYS: record, lock (same hash tag, so one Cluster slot).
 */
const WRITE_IF_OWNER = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
local generation = tonumber(redis.call('HGET', KEYS[1], 'generation') or '0')
if generation ~= tonumber(ARGV[2]) then return -2 end
generation = generation + 1
redis.call('HSET', KEYS[1], 'accessToken', ARGV[3], 'refreshToken', ARGV[4], 'accessExpiresAt', ARGV[5],
  'renewAt', ARGV[6], 'refreshExpiresAt', ARGV[7], 'generation', generation, 'accessTokenSha256', ARGV[9])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return generation`;

/**
 * Expire the access token only if it is still the current one: compare, don't blindly delete.
 * The token itself may be sealed (store-cipher.ts), so its SHA-256 is compared; a record written
 * before that field existed is compared by the SHA-1 Redis can compute.
 */
const INVALIDATE_IF_CURRENT = `
local id = redis.call('HGET', KEYS[1], 'accessTokenSha256')
local current = false
if id then current = id == ARGV[1] else
  local token = redis.call('HGET', KEYS[1], 'accessToken')
  current = token and redis.sha1hex(token) == ARGV[2]
end
if current then
  redis.call('HSET', KEYS[1], 'accessExpiresAt', 0, 'renewAt', 0)
  return 1
end
return 0`;

interface TokenScripts {
  vgwTokenUnlock(lock: string, owner: string): Promise<number>;
  vgwTokenWrite(record: string, lock: string, ...args: (string | number)[]): Promise<number>;
  vgwTokenInvalidate(record: string, accessTokenSha256: string, accessTokenSha1: string): Promise<number>;
}

export class RedisTokenStore extends TokenStore {
  private readonly scripts: TokenScripts;

  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
  ) {
    super();
    client.defineCommand('vgwTokenUnlock', { numberOfKeys: 1, lua: UNLOCK });
    client.defineCommand('vgwTokenWrite', { numberOfKeys: 2, lua: WRITE_IF_OWNER });
    client.defineCommand('vgwTokenInvalidate', { numberOfKeys: 1, lua: INVALIDATE_IF_CURRENT });
    this.scripts = client as unknown as TokenScripts;
  }

  /** The commands connection `ready` (Redis, its Sentinel's master or the Cluster), within `timeoutMs`. */
  override whenReachable(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const ready = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.client.off('ready', ready);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      this.client.once('ready', ready);
    });
  }

  read(): Promise<TokenRecord | null> {
    return storeCall('token read', async () => {
      const key = this.keys.tokenRecord();
      const hash = await this.client.hgetall(key);
      if (!hash.accessToken || !hash.refreshToken) return null;
      return {
        accessToken: this.cipher.open(hash.accessToken, `${key}:accessToken`),
        refreshToken: this.cipher.open(hash.refreshToken, `${key}:refreshToken`),
        accessExpiresAt: Number(hash.accessExpiresAt),
        renewAt: Number(hash.renewAt),
        refreshExpiresAt: Number(hash.refreshExpiresAt),
        generation: Number(hash.generation),
      };
    });
  }

  tryLock(owner: string, ttlMs: number): Promise<boolean> {
    return storeCall(
      'token lock',
      async () => (await this.client.set(this.keys.tokenLock(), owner, 'PX', ttlMs, 'NX')) === 'OK',
    );
  }

  unlock(owner: string): Promise<void> {
    return storeCall('token unlock', async () => {
      await this.scripts.vgwTokenUnlock(this.keys.tokenLock(), owner);
    });
  }

  writeIfOwner(
    owner: string,
    expectedGeneration: number,
    record: Omit<TokenRecord, 'generation'>,
    ttlMs: number,
  ): Promise<number | null> {
    return storeCall('token write', async () => {
      const key = this.keys.tokenRecord();
      const generation = await this.scripts.vgwTokenWrite(
        key,
        this.keys.tokenLock(),
        owner,
        expectedGeneration,
        this.cipher.seal(record.accessToken, `${key}:accessToken`),
        this.cipher.seal(record.refreshToken, `${key}:refreshToken`),
        record.accessExpiresAt,
        record.renewAt,
        record.refreshExpiresAt,
        Math.max(1, Math.round(ttlMs)),
        digest('sha256', record.accessToken),
      );
      return generation > 0 ? generation : null;
    });
  }

  invalidateIfCurrent(accessToken: string): Promise<boolean> {
    return storeCall(
      'token invalidate',
      async () =>
        (await this.scripts.vgwTokenInvalidate(
          this.keys.tokenRecord(),
          digest('sha256', accessToken),
          digest('sha1', accessToken),
        )) === 1,
    );
  }

  // The backoff holds no secret (a reason, a count, a time): stored in clear (docs/architecture.md).
  readBackoff(): Promise<RenewalBackoff | null> {
    return storeCall('token backoff read', async () => {
      const raw = await this.client.get(this.keys.tokenBackoff());
      if (raw === null) return null;
      try {
        const value = JSON.parse(raw) as Partial<RenewalBackoff>;
        const valid =
          FAILURE_REASONS.includes(value.reason as TokenFailureReason) &&
          Number.isInteger(value.attempts) &&
          Number.isFinite(value.retryAt);
        return valid ? (value as RenewalBackoff) : null;
      } catch {
        return null;
      }
    });
  }

  writeBackoff(backoff: RenewalBackoff, ttlMs: number): Promise<void> {
    return storeCall('token backoff write', async () => {
      const { reason, attempts, retryAt } = backoff;
      await this.client.set(
        this.keys.tokenBackoff(),
        JSON.stringify({ reason, attempts, retryAt }),
        'PX',
        Math.max(1, Math.round(ttlMs)),
      );
    });
  }

  clearBackoff(): Promise<void> {
    return storeCall('token backoff clear', async () => {
      await this.client.del(this.keys.tokenBackoff());
    });
  }

  publishRenewed(generation: number): Promise<void> {
    return storeCall('token publish', async () => {
      await this.client.publish(this.keys.tokenChannel(), String(generation));
    });
  }

  async onRenewed(listener: (generation: number) => void): Promise<void> {
    const channel = this.keys.tokenChannel();
    this.subscriber.on('message', (from: string, message: string) => {
      if (from === channel) listener(Number(message));
    });
    // Subscribe on every (re)connection: the first attempt may come before Redis is
    // reachable. Until a subscription holds, waiting replicas fall back to polling.
    const subscribe = () =>
      this.subscriber.subscribe(channel).then(
        () => undefined,
        () => undefined,
      );
    this.subscriber.on('ready', () => void subscribe());
    if (this.subscriber.status === 'ready') await subscribe();
  }
}

/** Identifies a token without revealing it (tokens are long random strings: no guessing). */
function digest(algorithm: 'sha256' | 'sha1', token: string): string {
  return createHash(algorithm).update(token).digest('hex');
}
