import { Logger } from '@nestjs/common';
import type { LedgerDatabase, SqlQueries } from './ledger-database.js';
import { ROLLUP_LOCK, addFactsSql, latestFactsSql } from './ledger-rollups.migration.js';
import { REUSED_ANSWER, latestFacts } from './ledger-rows.js';

/**
 * The daily roll-ups of migration 15 (ledger-rollups.migration.ts), as the console's aggregates
 * read them: the whole local days of a period from ledger_rollups, and only its partial days at
 * either end (an instant that is not the zone's midnight) from the entries. A zone without
 * roll-ups (one asked for that no replica configures) is read from the entries as before.
 */

/** The columns of one group of facts, whether a roll-up row or one entry (n = 1). */
const COLUMNS = `day, client_id, operation, status, upstream_code, upstream_message, reused, unit_price, currency, n,
  units_spent, units_saved`;

/** One entry as a roll-up row of its local day in the zone `$zone`. */
function entryAsGroup(zone: string): string {
  return `(e.created_at AT TIME ZONE ${zone})::date AS day, e.client_id, e.operation, e.status,
    CASE WHEN e.status = 'failed' THEN e.upstream_code END AS upstream_code,
    CASE WHEN e.status = 'failed' THEN e.upstream_message END AS upstream_message,
    ${REUSED_ANSWER('e')} AS reused, e.unit_price::text AS unit_price, e.currency, 1::bigint AS n,
    (CASE WHEN e.charged <> 'no' THEN e.cost_units ELSE 0 END)::bigint AS units_spent,
    (CASE WHEN ${REUSED_ANSWER('e')} THEN e.units_saved ELSE 0 END)::bigint AS units_saved`;
}

/** Off: every read scans the entries, as before migration 15 (the property test's reference). */
export const rollupReads = { enabled: true };

interface Bounds {
  rolled: boolean;
  d1: string;
  d2: string;
  a: string;
  b: string;
  exact: boolean;
}

const INSTANT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The whole local days [d1, d2) of [$1, $2) in zone $3 and their first instants a and b; `exact`
 * when each of a and b is the first instant of its day (a zone whose clocks skip midnight is
 * read from the entries instead).
 */
const BOUNDS_SQL = `
  SELECT EXISTS (SELECT 1 FROM ledger_rollup_zones WHERE zone = $3) AS rolled,
    to_char(d1, 'YYYY-MM-DD') AS d1, to_char(d2, 'YYYY-MM-DD') AS d2,
    to_char(a AT TIME ZONE 'UTC', ${INSTANT}) AS a, to_char(b AT TIME ZONE 'UTC', ${INSTANT}) AS b,
    (a AT TIME ZONE $3)::date = d1 AND ((a - interval '1 microsecond') AT TIME ZONE $3)::date < d1
      AND (b AT TIME ZONE $3)::date = d2 AND ((b - interval '1 microsecond') AT TIME ZONE $3)::date < d2 AS exact
  FROM (SELECT d1, d2, d1::timestamp AT TIME ZONE $3 AS a, d2::timestamp AT TIME ZONE $3 AS b
    FROM (SELECT (($1::timestamptz AT TIME ZONE $3) - interval '1 microsecond')::date + 1 AS d1,
      ($2::timestamptz AT TIME ZONE $3)::date AS d2) days) bounds`;

/**
 * Each inquiry created in [$1, $2) counted once by its latest fact, as a FROM item `facts` of
 * groups (COLUMNS) by local day in `zone`: roll-up rows for the whole days, entries for the
 * rest. Its parameters are numbered from `first` (the caller's $1 and $2 are the period).
 */
export async function dayFacts(
  tx: SqlQueries,
  from: Date,
  to: Date,
  zone: string,
  first: number,
): Promise<{ sql: string; params: unknown[] }> {
  const [bounds] = await tx.query<Bounds>(BOUNDS_SQL, [from, to, zone]);
  const z = `$${first}::text`;
  const edge = (lo: string, hi: string) => `SELECT ${COLUMNS} FROM ${latestFacts(entryAsGroup(z), lo, hi)}`;
  if (!rollupReads.enabled || !bounds.rolled || !bounds.exact || bounds.d1 >= bounds.d2) {
    return { sql: `(${edge('$1', '$2')}) facts`, params: [zone] };
  }
  const [d1, d2, a, b] = [first + 1, first + 2, first + 3, first + 4].map((n) => `$${n}`);
  return {
    sql: `(SELECT ${COLUMNS} FROM ledger_rollups WHERE zone = ${z} AND day >= ${d1}::date AND day < ${d2}::date AND n <> 0
      UNION ALL ${edge('$1', `${a}::timestamptz`)}
      UNION ALL ${edge(`${b}::timestamptz`, '$2')}) facts`,
    params: [zone, bounds.d1, bounds.d2, bounds.a, bounds.b],
  };
}

/**
 * Keeps roll-ups in each of `zones` (BUDGET_TIMEZONE: the trends' days), back-filling a zone
 * once when it is new: at start, under the roll-ups' lock (the writers of entries wait), never
 * on a page load. A zone PostgreSQL does not know is left to the entries' scan, with a warning.
 */
export async function ensureRollupZones(db: LedgerDatabase, zones: readonly string[]): Promise<void> {
  for (const zone of new Set(zones)) {
    const known = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_rollup_zones WHERE zone = $1', [
      zone,
    ]);
    if (known[0]?.n > 0) continue;
    try {
      await db.transaction(async (tx) => {
        await tx.query(`SELECT pg_advisory_xact_lock(${ROLLUP_LOCK})`);
        const added = await tx.query(
          'INSERT INTO ledger_rollup_zones (zone) VALUES ($1) ON CONFLICT DO NOTHING RETURNING 1',
          [zone],
        );
        if (added.length === 0) return;
        await tx.query(addFactsSql(latestFactsSql('true', 1), '(SELECT $1::text AS zone)'), [zone]);
      });
    } catch (error) {
      new Logger('LedgerRollups').warn(
        `no roll-ups in time zone ${JSON.stringify(zone)} (trends in it read the entries): ${(error as Error).message}`,
      );
    }
  }
}

/**
 * Takes the entries created in [start, end) back out of the roll-ups, before retention drops
 * their partition in the same transaction: the roll-ups keep agreeing with the entries kept.
 */
export async function subtractFromRollups(tx: SqlQueries, start: string, end: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(${ROLLUP_LOCK})`);
  await tx.query(addFactsSql(latestFactsSql(`e.created_at >= $1 AND e.created_at < $2`, -1), 'ledger_rollup_zones'), [
    start,
    end,
  ]);
}

/**
 * An aggregate (ledger-rows.ts, `aggregate`: JIT off, room to hash) over `dayFacts` of
 * [params[0], params[1]) in `zone`: `sql` is given the FROM item.
 */
export function aggregateDays<R>(
  db: LedgerDatabase,
  zone: string,
  params: [Date, Date, ...unknown[]],
  sql: (facts: string) => string,
): Promise<R[]> {
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL jit = off');
    await tx.query("SET LOCAL work_mem = '32MB'");
    const facts = await dayFacts(tx, params[0], params[1], zone, params.length + 1);
    return tx.query<R>(sql(facts.sql), [...params, ...facts.params]);
  });
}
