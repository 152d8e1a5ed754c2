import { byCodeUnits, refusalsBetween } from './ledger-refusals.js';
import { aggregateDays } from './ledger-rollups.js';
import type { LedgerStore } from './ledger.store.js';
import { RecordedMoney } from './recorded-money.js';
import { unitSum } from './unit-sums.js';

/** One day × client × operation of GET /admin/trends (docs/api.md §7). */
export interface TrendRow {
  /** The day in BUDGET_TIMEZONE, `2026-11-24` (Gregorian: the page writes it on the configured calendar). */
  day: string;
  clientId: string;
  operation: string;
  inquiries: number;
  succeeded: number;
  failed: number;
  unknown: number;
  /** Reused answers that bought nothing (ledger-rows.ts, REUSED_ANSWER; 0 until this ledger records reuse). */
  reused: number;
  /** Cost units of inquiries charged or possibly charged: what was spent, never a failed inquiry's price. Exact (unit-sums.ts). */
  unitsSpent: bigint;
  /** unitsSpent × the price each entry recorded (recorded-money.ts). */
  spent: RecordedMoney;
  /** Refused with 429 budget_exhausted that day (never in the ledger's entries: no trackId). */
  refusedBudget: number;
  /** Refused with 429 rate_limited by a quota (per client or per end user) that day. */
  refusedQuota: number;
}

/** Failed inquiries of one day and client by the upstream's code (no code: the gateway's own failure). */
export interface FailureRow {
  day: string;
  clientId: string;
  upstreamCode: number | null;
  /** The latest upstream message recorded for that code, when the ledger has one. */
  upstreamMessage: string | null;
  count: number;
}

export interface Trends {
  rows: TrendRow[];
  failures: FailureRow[];
}

interface Group {
  day: string;
  client_id: string;
  operation: string;
  status: 'succeeded' | 'failed' | 'unknown';
  upstream_code: number | null;
  upstream_message: string | null;
  reused: boolean;
  n: number;
  units_spent: string | number | bigint;
  unit_price: string | null;
  currency: string | null;
}

/**
 * Per day (in `timeZone`), client and operation, each inquiry counted once by its latest fact:
 * one aggregate of the zone's roll-ups (the partial days at the ends from the entries:
 * ledger-rollups.ts), its groups folded here into the day × client × operation rows and the failures
 * by upstream code. Small whatever the number of entries (days × clients × operations × codes).
 * The refusals (ledger_refusals) join the rows of their day, client and operation, or make rows
 * of their own; they are tallied by their day in `refusalZone` (BUDGET_TIMEZONE) whatever
 * `timeZone` the rows are asked in.
 */
export async function trends(
  store: LedgerStore,
  from: Date,
  to: Date,
  timeZone: string,
  refusalZone = timeZone,
): Promise<Trends> {
  await store.ready();
  const refusals = await refusalsBetween(store.db, from, to, refusalZone);
  // Grouped by the recorded price as written (text: 7.5 and 7.50 are two groups, so a sum keeps
  // the scale of the entries' own amounts, test/recorded-price.integration.spec.ts).
  const groups = await aggregateDays<Group>(
    store.db,
    timeZone,
    [from, to],
    (facts) => `SELECT to_char(facts.day, 'YYYY-MM-DD') AS day, client_id, operation, status, upstream_code,
       max(upstream_message) AS upstream_message, reused, sum(n)::int AS n,
       (coalesce(sum(units_spent), 0))::bigint AS units_spent, unit_price, currency
     FROM ${facts}
     GROUP BY facts.day, 2, 3, 4, 5, 7, 10, 11 ORDER BY 1, 2, 3`,
  );
  const rows = new Map<string, TrendRow>();
  const rowOf = (day: string, clientId: string, operation: string): TrendRow => {
    const key = JSON.stringify([day, clientId, operation]);
    let row = rows.get(key);
    if (!row) {
      row = { day, clientId, operation, ...EMPTY_ROW, spent: new RecordedMoney() };
      rows.set(key, row);
    }
    return row;
  };
  const failures = new Map<string, FailureRow>();
  for (const group of groups) {
    const row = rowOf(group.day, group.client_id, group.operation);
    row.inquiries += group.n;
    row[group.status] += group.n;
    if (group.reused) row.reused += group.n;
    const units = unitSum(group.units_spent);
    row.unitsSpent += units;
    row.spent.add(units, group.unit_price, group.currency);
    if (group.status !== 'failed') continue;
    const failureKey = `${group.day}|${group.client_id}|${group.upstream_code}`;
    const failure = failures.get(failureKey);
    if (failure) {
      failure.count += group.n;
      failure.upstreamMessage ??= group.upstream_message;
    } else
      failures.set(failureKey, {
        day: group.day,
        clientId: group.client_id,
        upstreamCode: group.upstream_code,
        upstreamMessage: group.upstream_message,
        count: group.n,
      });
  }
  for (const refused of refusals) {
    const row = rowOf(refused.day, refused.clientId, refused.operation);
    row.refusedBudget += refused.budget;
    row.refusedQuota += refused.quota;
  }
  // By day, client and operation (code-unit order, the same on both engines whatever their
  // collation), the refusal-only rows among the others.
  const ordered = [...rows.values()].sort((a, b) =>
    byCodeUnits([a.day, a.clientId, a.operation], [b.day, b.clientId, b.operation]),
  );
  return { rows: ordered, failures: [...failures.values()] };
}

const EMPTY_ROW = {
  inquiries: 0,
  succeeded: 0,
  failed: 0,
  unknown: 0,
  reused: 0,
  unitsSpent: 0n,
  refusedBudget: 0,
  refusedQuota: 0,
} as const;

/**
 * Units spent per client (charged or possibly charged, each inquiry by its latest fact) up to
 * `to`, from each of `starts` (the forecast's last 7 days and its month so far), from the
 * roll-ups and the entries of the partial days at the ends. In `zone`'s roll-ups when kept (the
 * sums are of instants, the same in any zone): BUDGET_TIMEZONE's, where the month starts at a midnight.
 */
export async function unitsSpentSince(
  store: LedgerStore,
  starts: Date[],
  to: Date,
  zone = 'UTC',
): Promise<Array<Map<string, bigint>>> {
  await store.ready();
  // One aggregate per start (two: the forecast's last days and its month), each of roll-ups and
  // the entries of its partial days.
  const sums: Array<Map<string, bigint>> = [];
  for (const start of starts) {
    const rows = await aggregateDays<{ client_id: string; units: string | number | bigint }>(
      store.db,
      zone,
      [start, to],
      (facts) => `SELECT client_id, (coalesce(sum(units_spent), 0))::bigint AS units FROM ${facts} GROUP BY 1`,
    );
    sums.push(
      new Map(rows.map((row) => [row.client_id, unitSum(row.units)] as const).filter(([, units]) => units > 0n)),
    );
  }
  return sums;
}
