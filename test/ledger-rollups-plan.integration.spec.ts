/**
 * The roll-ups' trigger (migrations 15 and 16, src/ledger/ledger-rollups.migration.ts) on the
 * embedded ledger as the gateway runs it: one session for the process's life, no autovacuum, so
 * no ANALYZE ever invalidates a plan. Its statement is planned at each call: a batch of 500 written
 * into a ledger of 30 000 entries finds its inquiries' facts by the key, not by a scan of every entry
 * with the plan made when the ledger was empty (docs/performance.md, "Single-node records").
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { PgliteLedgerDatabase } from '../src/ledger/ledger-database.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';

const START = '2032-03-01T00:00:00.000Z';
let db: PgliteLedgerDatabase;

beforeAll(async () => {
  db = await PgliteLedgerDatabase.open();
  await migrate(db);
  await ensurePartitions(db, [new Date(START)]);
});

afterAll(() => db.close());

/** `n` settled entries of new inquiries, one statement (as the drainer writes a batch), a millisecond apart from `from`. */
function write(n: number, from: number): Promise<unknown> {
  return db.query(
    `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
       cost_units, created_at, completed_at)
     SELECT gen_random_uuid(), 'settled', 'shop-a', 'shahkar', 'sync', 'succeeded', 'yes', 1,
       $1::timestamptz + (($2::int + i) || ' ms')::interval, $1::timestamptz + (($2::int + i) || ' ms')::interval
     FROM generate_series(1, $3::int) i`,
    [START, from, n],
  );
}

/** Sequential scans of the entries' partitions so far (this session's counts flushed first). */
async function entryScans(): Promise<number> {
  await db.query('SELECT pg_stat_force_next_flush()');
  const [row] = await db.query<{ n: number }>(
    `SELECT coalesce(sum(seq_scan), 0)::int AS n FROM pg_stat_user_tables WHERE relname LIKE 'ledger_entries_%'`,
  );
  return row.n;
}

it("plans the trigger's statement at each call: a batch into a grown ledger scans none of its entries", async () => {
  await write(20, 0); // the trigger's first call, on an empty ledger
  await write(30_000, 20);
  const before = await entryScans();

  await write(500, 30_020);

  expect(await entryScans()).toBe(before);
  const [rollup] = await db.query<{ n: number }>(`SELECT sum(n)::int AS n FROM ledger_rollups WHERE zone = 'UTC'`);
  expect(rollup.n).toBe(30_520);
});
