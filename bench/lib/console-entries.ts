import { performance } from 'node:perf_hooks';
import type { LedgerDatabase } from '../../src/ledger/ledger-database.js';
import { ensurePartitions } from '../../src/ledger/ledger-schema.js';

const DAY_MS = 86_400_000;

/**
 * `total` ledger entries over the `days` UTC days up to `today` (exclusive of the future), made
 * by PostgreSQL with generate_series, one INSERT per day (so the roll-ups' trigger keeps up as
 * the drainer's batches would make it, a day at a time): 20 clients, a third IBAN inquiries,
 * 1 in 20 failed (code 15), 1 in 500 overdue and `unknown`; of those, half resolved by a
 * reconciliation appended in a later statement, and one in five of the resolutions corrected.
 * The unit price recorded changes half-way (20 000 to 25 000 IRR). Returns the entries written.
 */
export async function generateEntries(
  db: LedgerDatabase,
  total: number,
  days: number,
  today: number,
  progress: (line: string) => void,
): Promise<number> {
  const firstDay = today - (days - 1) * DAY_MS;
  const perDay = Math.ceil(total / days);
  await ensurePartitions(
    db,
    Array.from({ length: days }, (_, d) => new Date(firstDay + d * DAY_MS)),
  );
  let written = 0;
  const began = performance.now();
  for (let d = 0; d < days; d++) {
    const dayStart = firstDay + d * DAY_MS;
    // Today only up to now: nothing in the future.
    const count = d === days - 1 ? Math.floor((perDay * (Date.now() - dayStart)) / DAY_MS) : perDay;
    const price = d < days / 2 ? '20000' : '25000';
    const [{ n }] = await db.query<{ n: number }>(
      `WITH w AS (INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
         cost_units, created_at, completed_at, upstream_code, upstream_message, request_id, unit_price, currency)
       SELECT gen_random_uuid(), CASE WHEN g % 500 = 7 THEN 'overdue' ELSE 'settled' END,
         'shop-' || lpad((((g * 7919) % 20) + 1)::text, 2, '0'),
         CASE WHEN g % 3 = 0 THEN 'iban' ELSE 'shahkar' END,
         CASE WHEN g % 10 = 0 THEN 'advanced' ELSE 'standard' END,
         CASE WHEN g % 500 = 7 THEN 'unknown' WHEN g % 20 = 3 THEN 'failed' ELSE 'succeeded' END,
         CASE WHEN g % 500 = 7 THEN 'possibly' WHEN g % 20 = 3 THEN 'no' ELSE 'yes' END,
         CASE WHEN g % 10 = 0 THEN 3 ELSE 1 END, t, CASE WHEN g % 500 <> 7 THEN t END,
         CASE WHEN g % 500 = 7 THEN NULL WHEN g % 20 = 3 THEN 15 ELSE 0 END,
         CASE WHEN g % 20 = 3 AND g % 500 <> 7 THEN 'National code and mobile do not match' END,
         md5(g::text), $3::numeric, 'IRR'
       FROM generate_series(0, $2::int - 1) g,
         LATERAL (SELECT $1::timestamptz + (g * (86400000.0 / greatest($2::int, 1))) * interval '1 millisecond' AS t) at
       RETURNING 1) SELECT count(*)::int AS n FROM w`,
      [new Date(dayStart).toISOString(), count, price],
    );
    written += n;
    // Resolutions of half the unknowns, appended later; a fifth of them corrected after.
    for (const [revision, share] of [
      [1, 2],
      [2, 10],
    ] as const) {
      const [{ r }] = await db.query<{ r: number }>(
        `WITH w AS (INSERT INTO ledger_entries (track_id, kind, revision, client_id, operation, request_handling_type,
           status, charged, cost_units, created_at, completed_at, upstream_code, request_id, unit_price, currency, resolved_by)
         SELECT track_id, 'reconciled', ${revision}, client_id, operation, request_handling_type,
           CASE WHEN ${revision} = 1 THEN 'succeeded' ELSE 'failed' END, CASE WHEN ${revision} = 1 THEN 'yes' ELSE 'no' END,
           cost_units, created_at, created_at, upstream_code, request_id, unit_price, currency, 'reconciliation'
         FROM ledger_entries WHERE kind = 'overdue' AND created_at >= $1 AND created_at < $2
           AND get_byte(decode(replace(track_id::text, '-', ''), 'hex'), 0) % ${share} = 0
         RETURNING 1) SELECT count(*)::int AS r FROM w`,
        [new Date(dayStart).toISOString(), new Date(dayStart + DAY_MS).toISOString()],
      );
      written += r;
    }
    if (d % 30 === 29 || d === days - 1)
      progress(`  ${written} entries, ${d + 1} of ${days} days, ${((performance.now() - began) / 1000).toFixed(0)} s`);
  }
  await db.query('ANALYZE ledger_entries');
  await db.query('ANALYZE ledger_rollups');
  return written;
}
