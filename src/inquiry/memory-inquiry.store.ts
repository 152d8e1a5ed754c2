import { LRUCache } from 'lru-cache';
import type { LedgerQueue } from '../ledger/ledger-queue.js';
import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';

/**
 * The in-process stores keep at most this many records and claims each (least recently used
 * go first): a single replica's sandbox or small deployment, not an unbounded heap.
 */
const MAX_ENTRIES = 100_000;

/** An LRU cache (lru-cache) whose entries each carry the TTL they were set with. */
function expiringCache<V extends object>(): LRUCache<string, V> {
  return new LRUCache<string, V>({ max: MAX_ENTRIES, ttlAutopurge: false, ttl: 60_000 });
}

export class MemoryInquiryStore extends InquiryStore {
  private readonly records = expiringCache<InquiryRecord>();

  /** `ledger`: the duty and entry written with the record (docs/architecture.md, "The ledger"). */
  constructor(private readonly ledger?: LedgerQueue) {
    super();
  }

  async create(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    if (this.records.has(record.trackId)) throw new Error('trackId collision');
    this.records.set(record.trackId, { ...record }, { ttl: ttlSeconds * 1000 });
    await this.ledger?.owe(record);
  }

  settle(record: InquiryRecord, ttlSeconds?: number): Promise<void> {
    if (this.records.has(record.trackId)) this.records.set(record.trackId, { ...record }, { noUpdateTTL: true });
    else if (ttlSeconds !== undefined && ttlSeconds > 0)
      this.records.set(record.trackId, { ...record }, { ttl: ttlSeconds * 1000 });
    return this.ledger?.settled(record) ?? Promise.resolve();
  }

  discard(trackId: string): Promise<void> {
    this.records.delete(trackId);
    return this.ledger?.discard(trackId) ?? Promise.resolve();
  }

  get(trackId: string): Promise<InquiryRecord | null> {
    const record = this.records.get(trackId);
    return Promise.resolve(record ? structuredClone(record) : null);
  }
}

export class MemoryIdempotencyStore extends IdempotencyStore {
  private readonly claims = expiringCache<IdempotencyClaim>();

  claim(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
    ttlSeconds: number,
  ): Promise<IdempotencyClaim | null> {
    const key = `${scope}:${keySha256}`;
    const existing = this.claims.get(key);
    if (existing) return Promise.resolve(structuredClone(existing));
    this.claims.set(key, { ...claim }, { ttl: ttlSeconds * 1000 });
    return Promise.resolve(null);
  }

  complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<void> {
    const key = `${scope}:${keySha256}`;
    const existing = this.claims.get(key);
    if (existing?.trackId === done.trackId && existing.state === 'in_flight')
      this.claims.set(key, structuredClone(done), { noUpdateTTL: true });
    return Promise.resolve();
  }

  release(scope: string, keySha256: string, trackId: string): Promise<void> {
    const key = `${scope}:${keySha256}`;
    if (this.claims.get(key)?.trackId === trackId) this.claims.delete(key);
    return Promise.resolve();
  }
}
