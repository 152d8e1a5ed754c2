import type { LedgerStore } from './ledger.store.js';
import { aggregate, latestFacts, REUSED_ANSWER } from './ledger-rows.js';
import { RecordedMoney } from './recorded-money.js';
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
  /**
   * Inquiries answered with a reused answer that bought nothing (docs/api.md §2), and the units
   * that saved; not a stale answer served after a fresh attempt (ledger-rows.ts, REUSED_ANSWER).
   */
  reused: number;
  unitsSaved: bigint;
  /** unitsSpent and unitsSaved × the price each entry recorded (recorded-money.ts). */
  spent: RecordedMoney;
  saved: RecordedMoney;
}

/**
 * Usage per client and UTC day or month, each inquiry counted once by its latest fact
 * (a reconciliation over a settlement over an overdue entry). One aggregate, grouped by the
 * price each entry recorded too (a price changes rarely: a few groups more), folded here into
 * one row per client and period: rows are clients × periods, small whatever the number of entries.
 */
export async function usage(store: LedgerStore, from: Date, to: Date, period: 'day' | 'month'): Promise<UsageRow[]> {
  await store.ready();
  const groups = await aggregate<{
    client_id: string;
    period: string;
    unit_price: string | null;
    currency: string | null;
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
       unit_price::text AS unit_price, currency,
       count(*)::int AS inquiries,
       (count(*) FILTER (WHERE status = 'succeeded'))::int AS succeeded,
       (count(*) FILTER (WHERE status = 'failed'))::int AS failed,
       (count(*) FILTER (WHERE status = 'unknown'))::int AS unknown,
       (coalesce(sum(cost_units) FILTER (WHERE charged <> 'no'), 0))::bigint AS units_spent,
       (count(*) FILTER (WHERE reused))::int AS reused,
       (coalesce(sum(units_saved) FILTER (WHERE reused), 0))::bigint AS units_saved
     FROM ${latestFacts(
       `e.client_id, e.created_at, e.status, e.charged, e.cost_units, ${REUSED_ANSWER('e')} AS reused, e.units_saved, e.unit_price, e.currency`,
     )} GROUP BY 1, 2, latest.unit_price::text, latest.currency ORDER BY 1, 2`,
    [from, to, period, period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'],
  );
  const rows: UsageRow[] = [];
  for (const group of groups) {
    let row = rows[rows.length - 1];
    // Ordered by client and period: a row's price groups come one after another.
    if (row?.clientId !== group.client_id || row.period !== group.period) {
      row = {
        clientId: group.client_id,
        period: group.period,
        inquiries: 0,
        succeeded: 0,
        failed: 0,
        unknown: 0,
        unitsSpent: 0n,
        reused: 0,
        unitsSaved: 0n,
        spent: new RecordedMoney(),
        saved: new RecordedMoney(),
      };
      rows.push(row);
    }
    const [spent, saved] = [unitSum(group.units_spent), unitSum(group.units_saved)];
    row.inquiries += group.inquiries;
    row.succeeded += group.succeeded;
    row.failed += group.failed;
    row.unknown += group.unknown;
    row.unitsSpent += spent;
    row.reused += group.reused;
    row.unitsSaved += saved;
    row.spent.add(spent, group.unit_price, group.currency);
    row.saved.add(saved, group.unit_price, group.currency);
  }
  return rows;
}
