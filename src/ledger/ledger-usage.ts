import type { LedgerStore } from './ledger.store.js';
import { aggregate, latestFacts } from './ledger-rows.js';
import { unitSum } from './unit-sums.js';

/** One row of GET /admin/usage (docs/api.md §7). */
export interface UsageRow {
  clientId: string;
  /** The day (`2026-11-24`) or month (`2026-11`), in UTC. */
  period: string;
  inquiries: number;
  succeeded: number;
  failed: number;
  unknown: number;
  /** Cost units of inquiries charged or possibly charged (an `unknown` is kept as spent). Exact (unit-sums.ts). */
  unitsSpent: bigint;
  /** Inquiries answered with a reused answer (docs/api.md §2), and the units that saved. */
  reused: number;
  unitsSaved: bigint;
}

/**
 * Usage per client and UTC day or month, each inquiry counted once by its latest fact
 * (a reconciliation over a settlement over an overdue entry). One aggregate: rows are
 * clients × periods, small whatever the number of entries.
 */
export async function usage(store: LedgerStore, from: Date, to: Date, period: 'day' | 'month'): Promise<UsageRow[]> {
  await store.ready();
  const rows = await aggregate<{
    client_id: string;
    period: string;
    inquiries: number;
    succeeded: number;
    failed: number;
    unknown: number;
    units_spent: string | number | bigint;
    reused: number;
    units_saved: string | number | bigint;
  }>(
    store.db,
    `SELECT client_id, to_char(date_trunc($3, created_at AT TIME ZONE 'UTC'), $4) AS period,
       count(*)::int AS inquiries,
       (count(*) FILTER (WHERE status = 'succeeded'))::int AS succeeded,
       (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
       (count(*) FILTER (WHERE status = 'unknown'))::int AS unknown,
       (coalesce(sum(cost_units) FILTER (WHERE charged <> 'no'), 0))::bigint AS units_spent,
       (count(*) FILTER (WHERE reused_from IS NOT NULL))::int AS reused,
       (coalesce(sum(units_saved) FILTER (WHERE reused_from IS NOT NULL), 0))::bigint AS units_saved
     FROM ${latestFacts('e.client_id, e.created_at, e.status, e.charged, e.cost_units, e.reused_from, e.units_saved')} GROUP BY 1, 2 ORDER BY 1, 2`,
    [from, to, period, period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'],
  );
  return rows.map((row) => ({
    clientId: row.client_id,
    period: row.period,
    inquiries: row.inquiries,
    succeeded: row.succeeded,
    failed: row.failed,
    unknown: row.unknown,
    unitsSpent: unitSum(row.units_spent),
    reused: row.reused,
    unitsSaved: unitSum(row.units_saved),
  }));
}
