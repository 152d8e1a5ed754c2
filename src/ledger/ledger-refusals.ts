import type { RefusalCount } from '../caller-auth/refusal-tally.js';
import type { LedgerDatabase } from './ledger-database.js';

/** Rows per statement: five arrays of this length, one unnest. */
const CHUNK = 1_000;

/**
 * Adds a flush of refusal counts to `ledger_refusals` (migration 8): one transaction, additive
 * upserts (`count = count + excluded.count`), so replicas flushing the same key at once each add
 * theirs (test/ledger-refusals.integration.spec.ts). Sorted by key: two writers lock rows in the
 * same order and cannot deadlock. Never touches the money tables.
 */
export async function addRefusals(db: LedgerDatabase, counts: readonly RefusalCount[]): Promise<void> {
  if (counts.length === 0) return;
  const sorted = [...counts].sort((a, b) => byCodeUnits(keyOf(a), keyOf(b)));
  await db.transaction(async (tx) => {
    for (let start = 0; start < sorted.length; start += CHUNK) {
      const chunk = sorted.slice(start, start + CHUNK);
      await tx.query(
        `INSERT INTO ledger_refusals AS t (day, client_id, operation, reason, count)
         SELECT * FROM unnest($1::date[], $2::text[], $3::text[], $4::text[], $5::bigint[])
         ON CONFLICT (day, client_id, operation, reason) DO UPDATE SET count = t.count + excluded.count`,
        [
          chunk.map((c) => c.day),
          chunk.map((c) => c.clientId),
          chunk.map((c) => c.operation),
          chunk.map((c) => c.reason),
          chunk.map((c) => String(c.count)),
        ],
      );
    }
  });
}

/** Refusals of one day, client and operation, by reason. */
export interface RefusalRow {
  day: string;
  clientId: string;
  operation: string;
  budget: number;
  quota: number;
}

/**
 * Refusals of every day (in `zone`, the zone they were tallied in: BUDGET_TIMEZONE) that the
 * range [from, to) touches: a refusal's instant is not kept, only its day.
 */
export async function refusalsBetween(db: LedgerDatabase, from: Date, to: Date, zone: string): Promise<RefusalRow[]> {
  const rows = await db.query<{ day: string; client_id: string; operation: string; budget: string; quota: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, client_id, operation,
       (coalesce(sum(count) FILTER (WHERE reason = 'budget'), 0))::text AS budget,
       (coalesce(sum(count) FILTER (WHERE reason = 'quota'), 0))::text AS quota
     FROM ledger_refusals
     WHERE day >= ($1::timestamptz AT TIME ZONE $3)::date
       AND day <= (($2::timestamptz - interval '1 millisecond') AT TIME ZONE $3)::date
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [from, to, zone],
  );
  return rows.map((row) => ({
    day: row.day,
    clientId: row.client_id,
    operation: row.operation,
    budget: Number(row.budget),
    quota: Number(row.quota),
  }));
}

/**
 * Drops the refusal counts of days that ended before the entries' retention (LEDGER_RETENTION_DAYS)
 * began, with the entries' own partitions: they are kept as long as what they are read beside.
 * Returns how many rows went (test/ledger-refusals.integration.spec.ts, "retention").
 */
export async function dropExpiredRefusals(db: LedgerDatabase, now: Date, entriesDays: number): Promise<number> {
  const cutoff = new Date(now.getTime() - entriesDays * 86_400_000).toISOString().slice(0, 10);
  const [row] = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM ledger_refusals WHERE day < $1::date RETURNING 1) SELECT count(*)::int AS n FROM gone`,
    [cutoff],
  );
  return row?.n ?? 0;
}

function keyOf(count: RefusalCount): string[] {
  return [count.day, count.clientId, count.operation, count.reason];
}

/**
 * By code unit, field by field: an order that does not depend on a database's collation, so
 * both writers (and both engines) share it; also the trends' row order.
 */
export function byCodeUnits(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}
