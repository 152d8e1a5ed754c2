// Migration 12 (ledger-migrations.ts): the single-node records, in a file of their own for their length.

/**
 * What Redis holds for a replica, kept instead in the embedded PostgreSQL beside the ledger when
 * REDIS_URL is unset (docs/decisions/0018-single-node-records-beside-the-ledger.md):
 * inquiry records, Idempotency-Key claims, answers kept for reuse and the registry of inquiries in
 * flight. Each row carries the epoch ms it expires at, as a Redis key its TTL: a row past it is
 * absent to every read and write, and swept (ExpiredRowSweeper, src/store/sql-records.ts). No count cap: the disk
 * is the bound. Values are JSON, sealed when a key ring is set (StoreCipher); the columns in clear
 * are what the conditional writes compare: a uuid, a state, SHA-256 hex, and times.
 */
export const RECORDS_SQL = `
      CREATE TABLE vgw_records (
        track_id text PRIMARY KEY,
        status text NOT NULL,
        value text NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX vgw_records_expiry ON vgw_records (expires_at);
      -- key_sha256: SHA-256 of the caller's scope and the key's own SHA-256 (no caller text in clear).
      CREATE TABLE vgw_idempotency (
        key_sha256 text PRIMARY KEY,
        track_id text NOT NULL,
        state text NOT NULL CHECK (state IN ('in_flight', 'done')),
        value text NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX vgw_idempotency_expiry ON vgw_idempotency (expires_at);
      -- completed_at: the store's clock when it was stored (its age is measured on it).
      CREATE TABLE vgw_answers (
        question_key text PRIMARY KEY,
        completed_at bigint NOT NULL,
        value text NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX vgw_answers_expiry ON vgw_answers (expires_at);
      CREATE TABLE vgw_in_flight (
        flight_key text PRIMARY KEY,
        track_id text NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX vgw_in_flight_expiry ON vgw_in_flight (expires_at);
`;
