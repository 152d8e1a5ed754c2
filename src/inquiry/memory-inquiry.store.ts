import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';

/** A map whose entries expire, for the single-replica in-process stores. */
class ExpiringMap<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V, ttlSeconds: number): void {
    this.sweep();
    this.entries.set(key, { value, expiresAt: Date.now() + ttlSeconds * 1000 });
  }

  /** Replaces the value, keeping the expiry. */
  replace(key: string, value: V): void {
    const entry = this.entries.get(key);
    if (entry) entry.value = value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  private sweep(): void {
    // Amortised: expired entries are dropped as new ones arrive.
    if (this.entries.size % 256 !== 0) return;
    const now = Date.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}

export class MemoryInquiryStore extends InquiryStore {
  private readonly records = new ExpiringMap<InquiryRecord>();

  async create(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    if (this.records.get(record.trackId)) throw new Error('trackId collision');
    this.records.set(record.trackId, { ...record }, ttlSeconds);
  }

  async settle(record: InquiryRecord): Promise<void> {
    if (this.records.get(record.trackId)) this.records.replace(record.trackId, { ...record });
  }

  async get(trackId: string): Promise<InquiryRecord | null> {
    const record = this.records.get(trackId);
    return record ? structuredClone(record) : null;
  }
}

export class MemoryIdempotencyStore extends IdempotencyStore {
  private readonly claims = new ExpiringMap<IdempotencyClaim>();

  async claim(scope: string, keySha256: string, claim: IdempotencyClaim, ttlSeconds: number): Promise<IdempotencyClaim | null> {
    const key = `${scope}:${keySha256}`;
    const existing = this.claims.get(key);
    if (existing) return structuredClone(existing);
    this.claims.set(key, { ...claim }, ttlSeconds);
    return null;
  }

  async complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<void> {
    const key = `${scope}:${keySha256}`;
    const existing = this.claims.get(key);
    if (existing?.trackId === done.trackId && existing.state === 'in_flight') this.claims.replace(key, structuredClone(done));
  }

  async release(scope: string, keySha256: string, trackId: string): Promise<void> {
    const key = `${scope}:${keySha256}`;
    if (this.claims.get(key)?.trackId === trackId) this.claims.delete(key);
  }
}
