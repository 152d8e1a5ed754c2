import { LRUCache } from 'lru-cache';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';

/**
 * The in-process stores hold at most this many records and claims each: a single replica's
 * sandbox or small deployment, not an unbounded heap. Nothing is evicted before its TTL (an
 * Idempotency-Key forgotten early would let a retry be charged again): when full, a new
 * inquiry is refused with 503 `store_unavailable` until entries expire. With the default 24 h
 * TTL that is about 1.1 inquiries a second sustained (docs/operations.md).
 */
export const MAX_ENTRIES = 100_000;

/** Entries that each carry the TTL they were set with, never dropped before it (lru-cache for the expiry). */
class ExpiringEntries<V extends object> {
  private readonly cache: LRUCache<string, V>;

  constructor(
    private readonly what: string,
    private readonly max: number,
  ) {
    // One spare slot: the check below refuses before lru-cache would ever evict.
    this.cache = new LRUCache<string, V>({ max: max + 1, ttlAutopurge: false, ttl: 60_000 });
  }

  has(key: string): boolean {
    return this.cache.has(key);
  }

  get(key: string): V | undefined {
    return this.cache.get(key);
  }

  /** A new key when full (expired entries aside) throws StoreUnavailableError: nothing is evicted. */
  set(key: string, value: V, options: { ttl?: number; noUpdateTTL?: boolean }): void {
    if (!this.cache.has(key) && this.cache.size >= this.max) {
      this.cache.purgeStale();
      if (this.cache.size >= this.max) throw new StoreUnavailableError(`${this.what} (in-process store full)`);
    }
    this.cache.set(key, value, options);
  }

  delete(key: string): void {
    this.cache.delete(key);
  }
}

/** `work`'s result as a promise, its throw as a rejection (as the Redis stores answer); run at once. */
function settled<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve) => resolve(work()));
}

export class MemoryInquiryStore extends InquiryStore {
  private readonly records: ExpiringEntries<InquiryRecord>;

  constructor(maxEntries = MAX_ENTRIES) {
    super();
    this.records = new ExpiringEntries('inquiry record', maxEntries);
  }

  create(record: InquiryRecord, ttlSeconds: number): Promise<undefined> {
    return settled(() => {
      if (this.records.has(record.trackId)) throw new Error('trackId collision');
      this.records.set(record.trackId, { ...record }, { ttl: ttlSeconds * 1000 });
      return undefined;
    });
  }

  /** No ledger is written here either: the same as `create`. */
  createJoined(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    return this.create(record, ttlSeconds);
  }

  settle(record: InquiryRecord, ttlSeconds?: number): Promise<void> {
    return settled(() => {
      if (this.records.has(record.trackId)) this.records.set(record.trackId, { ...record }, { noUpdateTTL: true });
      else if (ttlSeconds !== undefined && ttlSeconds > 0)
        this.records.set(record.trackId, { ...record }, { ttl: ttlSeconds * 1000 });
    });
  }

  concludeUnknown(trackId: string, completedAt: string): Promise<InquiryRecord | null> {
    const record = this.records.get(trackId);
    if (record?.status === 'pending') {
      this.records.set(trackId, { ...record, status: 'unknown', completedAt }, { noUpdateTTL: true });
    }
    return this.get(trackId);
  }

  discard(trackId: string): Promise<void> {
    this.records.delete(trackId);
    return Promise.resolve();
  }

  get(trackId: string): Promise<InquiryRecord | null> {
    const record = this.records.get(trackId);
    return Promise.resolve(record ? structuredClone(record) : null);
  }
}

export class MemoryIdempotencyStore extends IdempotencyStore {
  private readonly claims: ExpiringEntries<IdempotencyClaim>;

  constructor(maxEntries = MAX_ENTRIES) {
    super();
    this.claims = new ExpiringEntries('idempotency claim', maxEntries);
  }

  claim(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
    ttlSeconds: number,
  ): Promise<IdempotencyClaim | null> {
    return settled(() => {
      const key = `${scope}:${keySha256}`;
      const existing = this.claims.get(key);
      if (existing) return structuredClone(existing);
      this.claims.set(key, { ...claim }, { ttl: ttlSeconds * 1000 });
      return null;
    });
  }

  peek(scope: string, keySha256: string): Promise<IdempotencyClaim | null> {
    return settled(() => {
      const existing = this.claims.get(`${scope}:${keySha256}`);
      return existing ? structuredClone(existing) : null;
    });
  }

  complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<boolean> {
    const key = `${scope}:${keySha256}`;
    const existing = this.claims.get(key);
    if (existing?.trackId !== done.trackId || existing.state !== 'in_flight') return Promise.resolve(false);
    this.claims.set(key, structuredClone(done), { noUpdateTTL: true });
    return Promise.resolve(true);
  }

  release(scope: string, keySha256: string, trackId: string): Promise<void> {
    const key = `${scope}:${keySha256}`;
    if (this.claims.get(key)?.trackId === trackId) this.claims.delete(key);
    return Promise.resolve();
  }
}
