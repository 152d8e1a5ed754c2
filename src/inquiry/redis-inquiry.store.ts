import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import type { BudgetAction } from '../ledger/ledger-queue.js';
import type { RedisLedgerQueue } from '../ledger/redis-ledger.queue.js';
import type { RedisClient } from '../store/redis-connection.js';
import type { RedisKeys } from '../store/redis-keys.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { storeCall } from '../store/store-unavailable.error.js';
import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';

/** Replaces the record only if it is still exactly the value read before (compare-and-set). */
const CONCLUDE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1`;

interface InquiryScripts {
  vgwInquiryConclude(key: string, expected: string, concluded: string): Promise<number>;
}

export class RedisInquiryStore extends InquiryStore {
  private readonly scripts: InquiryScripts;
  /** The ledger's queue when it writes the record itself (standalone Redis), else undefined. */
  private readonly fused: RedisLedgerQueue | undefined;
  override readonly accountsWithRecord: boolean;

  /**
   * `ledger`: on standalone Redis the record's create and settle are the ledger's scripts (the
   * duty, the entry and the budget ride the record's own command: docs/architecture.md, "The
   * ledger"); without it, or on a Cluster, plain commands.
   */
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
    ledger?: RedisLedgerQueue,
  ) {
    super();
    this.fused = ledger?.fusesRecords ? ledger : undefined;
    this.accountsWithRecord = this.fused !== undefined;
    client.defineCommand('vgwInquiryConclude', { numberOfKeys: 1, lua: CONCLUDE });
    this.scripts = client as unknown as InquiryScripts;
  }

  create(record: InquiryRecord, ttlSeconds: number, reservation?: ReserveRequest): Promise<ReserveResult | undefined> {
    const key = this.keys.inquiry(record.trackId);
    if (this.fused) {
      return this.fused.createWithRecord(key, this.sealed(record, key), ttlSeconds, record, reservation);
    }
    return this.createPlain(key, record, ttlSeconds).then(() => undefined);
  }

  createJoined(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    return this.createPlain(this.keys.inquiry(record.trackId), record, ttlSeconds);
  }

  settle(record: InquiryRecord, ttlSeconds?: number, budget?: BudgetAction): Promise<void> {
    const key = this.keys.inquiry(record.trackId);
    if (this.fused) {
      return this.fused.settleWithRecord(key, this.sealed(record, key), ttlSeconds, record, budget);
    }
    return storeCall('inquiry settle', async () => {
      const value = this.sealed(record, key);
      const replaced = await this.client.set(key, value, 'KEEPTTL', 'XX');
      if (replaced === null && ttlSeconds !== undefined && ttlSeconds > 0) {
        await this.client.set(key, value, 'EX', ttlSeconds, 'NX');
      }
    });
  }

  concludeUnknown(trackId: string, completedAt: string): Promise<InquiryRecord | null> {
    return storeCall('inquiry conclude', async () => {
      const key = this.keys.inquiry(trackId);
      const stored = await this.client.get(key);
      if (!stored) return null;
      const record = JSON.parse(this.cipher.open(stored, key)) as InquiryRecord;
      if (record.status !== 'pending') return record;
      const concluded: InquiryRecord = { ...record, status: 'unknown', completedAt };
      // Compare-and-set on the stored value itself (sealed values are opaque to Lua): replaced
      // only if nothing was written since it was read.
      const replaced = await this.scripts.vgwInquiryConclude(key, stored, this.sealed(concluded, key));
      if (replaced === 1) return concluded;
      const now = await this.client.get(key);
      return now ? (JSON.parse(this.cipher.open(now, key)) as InquiryRecord) : null;
    });
  }

  discard(trackId: string): Promise<void> {
    return storeCall('inquiry discard', async () => {
      await this.client.del(this.keys.inquiry(trackId));
    });
  }

  get(trackId: string): Promise<InquiryRecord | null> {
    return storeCall('inquiry read', async () => {
      const key = this.keys.inquiry(trackId);
      const value = await this.client.get(key);
      return value ? (JSON.parse(this.cipher.open(value, key)) as InquiryRecord) : null;
    });
  }

  /** The record alone, only if none is stored under its trackId. */
  private createPlain(key: string, record: InquiryRecord, ttlSeconds: number): Promise<void> {
    return storeCall('inquiry create', async () => {
      const done = await this.client.set(key, this.sealed(record, key), 'EX', ttlSeconds, 'NX');
      if (done !== 'OK') throw new Error('trackId collision');
    });
  }

  /** A record as stored: JSON, sealed and bound to its key (StoreCipher). */
  private sealed(record: InquiryRecord, key: string): string {
    return this.cipher.seal(JSON.stringify(record), key);
  }
}

/** Stores the answer only while the claim is still in flight for this trackId. */
const COMPLETE = `
local existing = redis.call('GET', KEYS[1])
if not existing then return 0 end
local claim = cjson.decode(existing)
if claim.trackId ~= ARGV[1] or claim.state ~= 'in_flight' then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1`;

/** Deletes the claim only if it is still the one made for this trackId. */
const RELEASE = `
local existing = redis.call('GET', KEYS[1])
if existing and cjson.decode(existing).trackId == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

interface IdempotencyScripts {
  vgwIdemComplete(key: string, trackId: string, done: string): Promise<number>;
  vgwIdemRelease(key: string, trackId: string): Promise<number>;
}

export class RedisIdempotencyStore extends IdempotencyStore {
  private readonly scripts: IdempotencyScripts;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly cipher: StoreCipher,
  ) {
    super();
    client.defineCommand('vgwIdemComplete', { numberOfKeys: 1, lua: COMPLETE });
    client.defineCommand('vgwIdemRelease', { numberOfKeys: 1, lua: RELEASE });
    this.scripts = client as unknown as IdempotencyScripts;
  }

  claim(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
    ttlSeconds: number,
  ): Promise<IdempotencyClaim | null> {
    return storeCall('idempotency claim', async () => {
      const key = this.keys.idempotency(scope, keySha256);
      // One atomic command (Redis ≥ 7.0): sets ours unless a claim exists, and returns that one.
      const existing = await this.client.set(key, this.serialise(claim, key), 'EX', ttlSeconds, 'NX', 'GET');
      return existing ? this.parse(existing, key) : null;
    });
  }

  peek(scope: string, keySha256: string): Promise<IdempotencyClaim | null> {
    return storeCall('idempotency claim', async () => {
      const key = this.keys.idempotency(scope, keySha256);
      const existing = await this.client.get(key);
      return existing ? this.parse(existing, key) : null;
    });
  }

  complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<boolean> {
    return storeCall('idempotency complete', async () => {
      const key = this.keys.idempotency(scope, keySha256);
      return (await this.scripts.vgwIdemComplete(key, done.trackId, this.serialise(done, key))) === 1;
    });
  }

  /**
   * The scripts above read `trackId` and `state`, so those two stay in clear beside the sealed
   * claim (fingerprint and the stored response, which holds upstream data).
   */
  private serialise(claim: IdempotencyClaim, key: string): string {
    if (!this.cipher.enabled) return JSON.stringify(claim);
    return JSON.stringify({
      trackId: claim.trackId,
      state: claim.state,
      sealed: this.cipher.seal(JSON.stringify(claim), key),
    });
  }

  private parse(stored: string, key: string): IdempotencyClaim {
    const value = JSON.parse(stored) as IdempotencyClaim & { sealed?: string };
    return typeof value.sealed === 'string'
      ? (JSON.parse(this.cipher.open(value.sealed, key)) as IdempotencyClaim)
      : value;
  }

  release(scope: string, keySha256: string, trackId: string): Promise<void> {
    return storeCall('idempotency release', async () => {
      await this.scripts.vgwIdemRelease(this.keys.idempotency(scope, keySha256), trackId);
    });
  }
}
