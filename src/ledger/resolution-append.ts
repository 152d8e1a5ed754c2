import type { SqlQueries } from './ledger-database.js';
import type { Charged } from './ledger-entry.js';

/** Who learned a resolution (docs/api.md §8): the provider's list, or its tracking service. */
export type ResolvedBy = 'reconciliation' | 'tracking';

/**
 * Appends a resolution (revision 1 after an unknown) or a correction (the next revision) after
 * each row of `source` (alias `l`: the latest fact it follows), with the inquiry's facts, its
 * recorded reservation and its recorded unit price copied from that entry: never today's prices
 * (test/recorded-price.e2e.spec.ts). The key (track_id, kind, revision, created_at) makes it once:
 * two resolvers that read the same latest fact append one entry between them
 * (test/tracking.e2e.spec.ts). Returns how many were appended.
 */
export async function appendResolutions(
  tx: SqlQueries,
  verdict: { status: 'succeeded' | 'failed'; charged: Charged },
  source: string,
  params: unknown[],
  requestId: string | null,
  resolvedBy: ResolvedBy,
): Promise<number> {
  const [{ n }] = await tx.query<{ n: number }>(
    `WITH written AS (
       INSERT INTO ledger_entries (track_id, kind, revision, client_id, subject_sha256, operation,
         request_handling_type, status, charged, cost_units, created_at, completed_at, upstream_code, request_id,
         reserved_units, reserved_budgets, reserved_daily, reserved_monthly, reused_from, units_saved,
         unit_price, currency, resolved_by)
       SELECT l.track_id, 'reconciled', l.revision + 1, l.client_id, l.subject_sha256, l.operation,
         l.request_handling_type, '${verdict.status}', '${verdict.charged}', l.cost_units, l.created_at, l.completed_at,
         l.upstream_code, $${params.length + 1}, l.reserved_units, l.reserved_budgets, l.reserved_daily,
         l.reserved_monthly, l.reused_from, l.units_saved, l.unit_price, l.currency, '${resolvedBy}'
       FROM (${source}) l
       ON CONFLICT DO NOTHING RETURNING 1)
     SELECT count(*)::int AS n FROM written`,
    [...params, requestId],
  );
  return n;
}

/** The verdict a resolution records: charged is `succeeded` (the upstream charges successes only), else `failed`. */
export function verdictOf(charged: boolean): { status: 'succeeded' | 'failed'; charged: Charged } {
  return charged ? { status: 'succeeded', charged: 'yes' } : { status: 'failed', charged: 'no' };
}
