import type { LedgerStore } from './ledger.store.js';
import { aggregateDays } from './ledger-rollups.js';
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
 * (a reconciliation over a settlement over an overdue entry), read from the UTC roll-ups (the
 * partial days at the ends from the entries: ledger-rollups.ts). One aggregate, grouped by the
 * price each entry recorded too (a price changes rarely: a few groups more), folded here into
 * one row per client and period: rows are clients × periods, small whatever the number of entries.
 */
export async function usage(store: LedgerStore, from: Date, to: Date, period: 'day' | 'month'): Promise<UsageRow[]> {
  await store.ready();
  const groups = await aggregateDays<{
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
    'UTC',
    [from, to, period, period === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'],
    (facts) => `SELECT client_id, to_char(date_trunc($3, day::timestamp), $4) AS period, unit_price, currency,
       sum(n)::int AS inquiries,
       (coalesce(sum(n) FILTER (WHERE status = 'succeeded'), 0))::int AS succeeded,
       (coalesce(sum(n) FILTER (WHERE status = 'failed'), 0))::int AS failed,
       (coalesce(sum(n) FILTER (WHERE status = 'unknown'), 0))::int AS unknown,
       (coalesce(sum(units_spent), 0))::bigint AS units_spent,
       (coalesce(sum(n) FILTER (WHERE reused), 0))::int AS reused,
       (coalesce(sum(units_saved), 0))::bigint AS units_saved
     FROM ${facts} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2`,
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
