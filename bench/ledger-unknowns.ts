/**
 * `npm run bench:ledger-unknowns`: the cost of the gauge vgw_ledger_unknowns_older_than_a_day
 * (src/tracking/tracking-book.ts, UNKNOWNS_GAUGE_SQL), run once a minute by every replica, on a
 * ledger like a reviewer's: 420 000 entries over 13 months, 20 000 of them unknown (possibly
 * charged), 99.5 % of those resolved. Seeded by generate_series; its plan (EXPLAIN ANALYZE) and
 * its time, the best of 5, on a PostgreSQL server started for the run (fsync off) and on PGlite.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { PgLedgerDatabase, PgliteLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';
import { UNKNOWNS_GAUGE_SQL } from '../src/tracking/tracking-book.js';
import { PostgresServer } from '../test/support/postgres-server.js';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 420_000);
const DAYS = 13 * 31;
/** Every 21st entry unknown (20 000 of 420 000), and of those all but every 200th resolved. */
const SEED = `
  INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
    cost_units, created_at, revision)
  SELECT md5(i::text)::uuid, CASE WHEN i % 21 = 0 THEN 'overdue' ELSE 'settled' END, 'svc-a', 'shahkar', 'standard',
    CASE WHEN i % 21 = 0 THEN 'unknown' ELSE 'succeeded' END, CASE WHEN i % 21 = 0 THEN 'possibly' ELSE 'yes' END,
    1, now() - (i::double precision / $1) * interval '${DAYS} days', 0
  FROM generate_series(1, $1) i;
  INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
    cost_units, created_at, revision, resolved_by)
  SELECT track_id, 'reconciled', client_id, operation, request_handling_type, 'succeeded', 'yes', 1, created_at, 1,
    'reconciliation'
  FROM ledger_entries WHERE status = 'unknown' AND (hashtext(track_id::text) % 200) <> 0;
  ANALYZE ledger_entries;`;

async function measure(name: string, db: LedgerDatabase): Promise<void> {
  await migrate(db);
  const months = Array.from({ length: 22 }, (_, i) => new Date(Date.now() - i * 20 * 86_400_000));
  await ensurePartitions(db, months);
  for (const statement of SEED.split(';').filter((sql) => sql.trim()))
    await db.query(statement, statement.includes('$1') ? [ENTRIES] : []);
  const plan = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${UNKNOWNS_GAUGE_SQL}`);
  let best = Infinity;
  let n = 0;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    [{ n }] = await db.query<{ n: number }>(UNKNOWNS_GAUGE_SQL);
    best = Math.min(best, performance.now() - started);
  }
  console.log(
    `\n${name}: ${n} unknowns, best of 5 ${best.toFixed(1)} ms\n${plan.map((row) => row['QUERY PLAN']).join('\n')}`,
  );
}

const postgres = await PostgresServer.start();
try {
  const server = new PgLedgerDatabase(postgres.url);
  await measure('PostgreSQL', server).finally(() => server.close());
  const dir = mkdtempSync(join(tmpdir(), 'vgw-bench-unknowns-'));
  const pglite = await PgliteLedgerDatabase.open(dir);
  await measure('PGlite', pglite).finally(async () => {
    await pglite.close();
    rmSync(dir, { recursive: true, force: true });
  });
} finally {
  await postgres.stop();
}
