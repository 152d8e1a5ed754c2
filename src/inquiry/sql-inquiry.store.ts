import { sha256 } from '../crypto/sha256.js';
import type { StoreCipher } from '../store/store-cipher.js';
import { recordsCall, type RecordsDatabase } from '../store/sql-records.js';
import { storeCall, StoreUnavailableError } from '../store/store-unavailable.error.js';
import type { IdempotencyClaim, InquiryRecord } from './inquiry-record.js';
import { IdempotencyStore, InquiryStore } from './inquiry.store.js';

/*
 * The records and Idempotency-Keys of a single node (REDIS_URL unset, the embedded ledger) in its
 * PGlite (records.migration.ts), with the semantics of the Redis commands and scripts of
 * redis-inquiry.store.ts, each one statement: a row past its `expires_at` is absent (`$now`, this
 * process's clock, is every statement's last parameter), and every write over a row is
 * conditional (claim-if-absent, replace-if-present, compare-and-set on the stored value or state).
 */

/** SET NX EX: a new row, or over an expired one; no row returned when a live one holds the trackId. */
const CREATE = `INSERT INTO vgw_records AS r (track_id, status, value, expires_at) VALUES ($1, $2, $3, $4)
  ON CONFLICT (track_id) DO UPDATE SET status = EXCLUDED.status, value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
  WHERE r.expires_at <= $5 RETURNING 1 AS ok`;

/**
 * SET XX KEEPTTL, else (`$4` > 0: a record gone is written again) SET NX EX `$4` seconds: the
 * replacement of a live row, or else a row where none lives.
 */
const SETTLE = `WITH replaced AS (
    UPDATE vgw_records SET status = $2, value = $3 WHERE track_id = $1 AND expires_at > $5 RETURNING 1)
  INSERT INTO vgw_records AS r (track_id, status, value, expires_at)
    SELECT $1, $2, $3, $5 + $4::bigint * 1000 WHERE $4::bigint > 0 AND NOT EXISTS (SELECT 1 FROM replaced)
  ON CONFLICT (track_id) DO UPDATE SET status = EXCLUDED.status, value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
  WHERE r.expires_at <= $5`;

/** Compare-and-set on the stored value itself (as CONCLUDE in Redis): replaced only if nothing was written since it was read. */
const CONCLUDE = `UPDATE vgw_records SET status = 'unknown', value = $3
  WHERE track_id = $1 AND value = $2 AND expires_at > $4 RETURNING 1 AS ok`;

const READ = 'SELECT value FROM vgw_records WHERE track_id = $1 AND expires_at > $2';

export class SqlInquiryStore extends InquiryStore {
  constructor(
    private readonly db: RecordsDatabase,
    private readonly cipher: StoreCipher,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  async create(record: InquiryRecord, ttlSeconds: number): Promise<undefined> {
    const now = this.now();
    const row = [record.trackId, record.status, this.sealed(record), expiry(now, ttlSeconds), now];
    const created = await recordsCall(this.db, 'inquiry create', CREATE, row);
    // As the Redis store's SET NX refused inside storeCall: 503, nothing sent (InquiryStore.create).
    if (created.length === 0) throw new StoreUnavailableError('inquiry create', new Error('trackId collision'));
    return undefined;
  }

  /** No ledger is written with the record here either: the same as `create`. */
  createJoined(record: InquiryRecord, ttlSeconds: number): Promise<void> {
    return this.create(record, ttlSeconds);
  }

  async settle(record: InquiryRecord, ttlSeconds?: number): Promise<void> {
    const again = ttlSeconds !== undefined && ttlSeconds > 0 ? Math.ceil(ttlSeconds) : 0;
    const params = [record.trackId, record.status, this.sealed(record), again, this.now()];
    await recordsCall(this.db, 'inquiry settle', SETTLE, params);
  }

  concludeUnknown(trackId: string, completedAt: string): Promise<InquiryRecord | null> {
    return storeCall('inquiry conclude', async () => {
      const stored = await this.read(trackId);
      if (!stored) return null;
      const record = this.open(stored, trackId);
      if (record.status !== 'pending') return record;
      const concluded: InquiryRecord = { ...record, status: 'unknown', completedAt };
      const params = [trackId, stored, this.sealed(concluded), this.now()];
      const replaced = await recordsCall(this.db, 'inquiry conclude', CONCLUDE, params);
      if (replaced.length === 1) return concluded;
      return this.get(trackId);
    });
  }

  async discard(trackId: string): Promise<void> {
    await recordsCall(this.db, 'inquiry discard', 'DELETE FROM vgw_records WHERE track_id = $1', [trackId]);
  }

  /**
   * Opened inside storeCall, as the Redis store does: a value that does not open (its key left
   * the ring, or it was altered) is 503 `store_unavailable`, never a 500 (StoreCipher.open).
   */
  get(trackId: string): Promise<InquiryRecord | null> {
    return storeCall('inquiry read', async () => {
      const stored = await this.read(trackId);
      return stored ? this.open(stored, trackId) : null;
    });
  }

  private async read(trackId: string): Promise<string | null> {
    const rows = await recordsCall<{ value: string }>(this.db, 'inquiry read', READ, [trackId, this.now()]);
    return rows[0]?.value ?? null;
  }

  /** JSON, sealed and bound to its trackId (StoreCipher: a value copied to another row does not open). */
  private sealed(record: InquiryRecord): string {
    return this.cipher.seal(JSON.stringify(record), recordContext(record.trackId));
  }

  private open(stored: string, trackId: string): InquiryRecord {
    return JSON.parse(this.cipher.open(stored, recordContext(trackId))) as InquiryRecord;
  }
}

/** Epoch ms, whole (a bigint column): at least one second on. */
const expiry = (now: number, ttlSeconds: number) => Math.floor(now) + Math.max(1, Math.ceil(ttlSeconds)) * 1000;

const recordContext = (trackId: string) => `vgw:sql:inquiry:${trackId}`;

/**
 * SET NX GET, in one statement: a row is written where none lives (or over an expired one);
 * where one lives it is left as it was (a no-op update, so that it is returned). `won`: ours,
 * unless this very claim was already there (`again`, read before the write: a value in clear is
 * the same text each time it is made), which SET NX GET answers with itself.
 */
const CLAIM = `WITH again AS (SELECT 1 FROM vgw_idempotency
    WHERE key_sha256 = $1 AND track_id = $2 AND value = $4 AND expires_at > $6)
  INSERT INTO vgw_idempotency AS c (key_sha256, track_id, state, value, expires_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (key_sha256) DO UPDATE SET
    track_id = CASE WHEN c.expires_at <= $6 THEN EXCLUDED.track_id ELSE c.track_id END,
    state = CASE WHEN c.expires_at <= $6 THEN EXCLUDED.state ELSE c.state END,
    value = CASE WHEN c.expires_at <= $6 THEN EXCLUDED.value ELSE c.value END,
    expires_at = CASE WHEN c.expires_at <= $6 THEN EXCLUDED.expires_at ELSE c.expires_at END
  RETURNING track_id = $2 AND value = $4 AND NOT EXISTS (SELECT 1 FROM again) AS won, value`;

/** The answer, only while the claim is still the in-flight one of this trackId (COMPLETE in Redis). */
const COMPLETE = `UPDATE vgw_idempotency SET state = 'done', value = $3
  WHERE key_sha256 = $1 AND track_id = $2 AND state = 'in_flight' AND expires_at > $4 RETURNING 1 AS ok`;

/** The live claim under a key, if any (GET in Redis): a claim made under a former key name. */
const PEEK = 'SELECT value FROM vgw_idempotency WHERE key_sha256 = $1 AND expires_at > $2';

/** Deletes the claim only if it is still the one made for this trackId (RELEASE in Redis). */
const RELEASE = 'DELETE FROM vgw_idempotency WHERE key_sha256 = $1 AND track_id = $2';

export class SqlIdempotencyStore extends IdempotencyStore {
  constructor(
    private readonly db: RecordsDatabase,
    private readonly cipher: StoreCipher,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  async claim(
    scope: string,
    keySha256: string,
    claim: IdempotencyClaim,
    ttlSeconds: number,
  ): Promise<IdempotencyClaim | null> {
    const key = claimKey(scope, keySha256);
    const now = this.now();
    const value = this.sealed(claim, key);
    const params = [key, claim.trackId, claim.state, value, expiry(now, ttlSeconds), now];
    return storeCall('idempotency claim', async () => {
      const [row] = await recordsCall<{ won: boolean; value: string }>(this.db, 'idempotency claim', CLAIM, params);
      if (!row) throw new Error('idempotency claim: no row returned');
      return row.won ? null : this.open(row.value, key);
    });
  }

  peek(scope: string, keySha256: string): Promise<IdempotencyClaim | null> {
    const key = claimKey(scope, keySha256);
    return storeCall('idempotency claim', async () => {
      const [row] = await recordsCall<{ value: string }>(this.db, 'idempotency claim', PEEK, [key, this.now()]);
      return row ? this.open(row.value, key) : null;
    });
  }

  async complete(scope: string, keySha256: string, done: IdempotencyClaim): Promise<boolean> {
    const key = claimKey(scope, keySha256);
    const params = [key, done.trackId, this.sealed(done, key), this.now()];
    return (await recordsCall(this.db, 'idempotency complete', COMPLETE, params)).length === 1;
  }

  async release(scope: string, keySha256: string, trackId: string): Promise<void> {
    await recordsCall(this.db, 'idempotency release', RELEASE, [claimKey(scope, keySha256), trackId]);
  }

  private sealed(claim: IdempotencyClaim, key: string): string {
    return this.cipher.seal(JSON.stringify(claim), claimContext(key));
  }

  /** Called inside storeCall: a claim that does not open is a store failure (503), as in Redis. */
  private open(stored: string, key: string): IdempotencyClaim {
    return JSON.parse(this.cipher.open(stored, claimContext(key))) as IdempotencyClaim;
  }
}

/** The row's key: the scope holds caller text (a client id), never stored in clear nor compared raw. */
function claimKey(scope: string, keySha256: string): string {
  return sha256(JSON.stringify([scope, keySha256]));
}

const claimContext = (key: string) => `vgw:sql:idempotency:${key}`;
