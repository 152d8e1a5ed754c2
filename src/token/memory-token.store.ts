import { EventEmitter } from 'node:events';
import { SystemClock, type Clock } from './clock.js';
import type { TokenRecord } from './token-record.js';
import { TokenStore, type RenewalBackoff } from './token.store.js';

/** One replica only: the same contract as the Redis store, held in this process. */
export class MemoryTokenStore extends TokenStore {
  private record: TokenRecord | null = null;
  private lock: { owner: string; expiresAt: number } | null = null;
  private backoff: { value: RenewalBackoff; expiresAt: number } | null = null;
  private readonly events = new EventEmitter();

  constructor(private readonly clock: Clock = new SystemClock()) {
    super();
  }

  read(): Promise<TokenRecord | null> {
    return Promise.resolve(this.record ? { ...this.record } : null);
  }

  tryLock(owner: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now();
    if (this.lock && this.lock.expiresAt > now) return Promise.resolve(false);
    this.lock = { owner, expiresAt: now + ttlMs };
    return Promise.resolve(true);
  }

  unlock(owner: string): Promise<void> {
    if (this.lock?.owner === owner) this.lock = null;
    return Promise.resolve();
  }

  writeIfOwner(
    owner: string,
    expectedGeneration: number,
    record: Omit<TokenRecord, 'generation'>,
  ): Promise<number | null> {
    if (this.lock?.owner !== owner || this.lock.expiresAt <= this.clock.now()) return Promise.resolve(null);
    if ((this.record?.generation ?? 0) !== expectedGeneration) return Promise.resolve(null);
    this.record = { ...record, generation: expectedGeneration + 1 };
    return Promise.resolve(this.record.generation);
  }

  invalidateIfCurrent(accessToken: string): Promise<boolean> {
    if (this.record?.accessToken !== accessToken) return Promise.resolve(false);
    this.record = { ...this.record, accessExpiresAt: 0, renewAt: 0 };
    return Promise.resolve(true);
  }

  readBackoff(): Promise<RenewalBackoff | null> {
    const live = this.backoff && this.backoff.expiresAt > this.clock.now() ? { ...this.backoff.value } : null;
    return Promise.resolve(live);
  }

  writeBackoff(backoff: RenewalBackoff, ttlMs: number): Promise<void> {
    this.backoff = { value: { ...backoff }, expiresAt: this.clock.now() + ttlMs };
    return Promise.resolve();
  }

  clearBackoff(): Promise<void> {
    this.backoff = null;
    return Promise.resolve();
  }

  publishRenewed(generation: number): Promise<void> {
    this.events.emit('renewed', generation);
    return Promise.resolve();
  }

  onRenewed(listener: (generation: number) => void): Promise<void> {
    this.events.on('renewed', listener);
    return Promise.resolve();
  }
}
