import { isInt4, type EntryStatus, type LedgerEntry, type QueuedEntry } from './ledger-entry.js';

/** A row of ledger_entries as the reads select it (ENTRY_COLUMNS), and its mapping to and from an entry. */
export interface EntryRow {
  track_id: string;
  kind: LedgerEntry['kind'];
  client_id: string;
  subject_sha256: string | null;
  operation: LedgerEntry['operation'];
  request_handling_type: LedgerEntry['requestHandlingType'];
  status: EntryStatus;
  charged: LedgerEntry['charged'];
  cost_units: number;
  created_at: Date;
  completed_at: Date | null;
  upstream_code: number | null;
  upstream_message: string | null;
  request_id: string | null;
  revision: number;
  reserved_units: number | null;
  reserved_budgets: string[] | null;
  reserved_daily: string | null;
  reserved_monthly: string | null;
  reused_from: string | null;
  units_saved: number | null;
  unit_price: string | null;
  currency: string | null;
  resolved_by: LedgerEntry['resolvedBy'] | null;
}

export const ENTRY_COLUMNS = `track_id::text AS track_id, kind, client_id, subject_sha256, operation, request_handling_type,
  status, charged, cost_units, created_at, completed_at, upstream_code, upstream_message, request_id, revision,
  reserved_units, reserved_budgets, reserved_daily, reserved_monthly, reused_from::text AS reused_from, units_saved,
  unit_price::text AS unit_price, currency, resolved_by`;

/** Of one inquiry's entries, the latest fact first: reconciled (highest revision) > settled > overdue. */
export const LATEST_FIRST = `CASE kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END DESC, revision DESC`;

/**
 * Each inquiry's latest fact among the entries created in [$1, $2), as a FROM item `latest` with
 * `columns` (of alias `e`): the same choice as LATEST_FIRST, written as three anti-joins by kind
 * instead of a DISTINCT ON, which sorted every entry of the period (6 s for 600 000 on the bench;
 * this: one scan of the settled entries, and the partial indexes of migration 7 for the few
 * others). A settled entry stands unless reconciled; an overdue one unless settled or
 * reconciled; a reconciliation unless corrected (test/console-reads.integration.spec.ts).
 */
export function latestFacts(columns: string, from = '$1', to = '$2'): string {
  return `(
  SELECT ${columns} FROM ledger_entries e WHERE e.created_at >= ${from} AND e.created_at < ${to} AND e.kind = 'settled'
    AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.kind = 'reconciled'
      AND l.track_id = e.track_id AND l.created_at = e.created_at)
  UNION ALL
  SELECT ${columns} FROM ledger_entries e WHERE e.created_at >= ${from} AND e.created_at < ${to} AND e.kind = 'overdue'
    AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.kind <> 'overdue'
      AND l.track_id = e.track_id AND l.created_at = e.created_at)
  UNION ALL
  SELECT ${columns} FROM ledger_entries e WHERE e.created_at >= ${from} AND e.created_at < ${to} AND e.kind = 'reconciled'
    AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.kind = 'reconciled'
      AND l.track_id = e.track_id AND l.created_at = e.created_at AND l.revision > e.revision)
) latest`;
}

/**
 * Whether the entry of alias `alias` is a reused answer that bought nothing: the reuse path's
 * (nothing sent under it: costUnits 0, its unitsSaved recorded; docs/api.md §2). A stale answer
 * served after a fresh attempt failed keeps `reused_from` too, but that attempt was sent, may
 * have been charged and saved nothing: usage, trends and the list's `reused` leave it out
 * (issue 43; test/ledger-store.integration.spec.ts, 'counts as reused only answers…').
 */
export const REUSED_ANSWER = (alias: string) =>
  `(${alias}.reused_from IS NOT NULL AND ${alias}.units_saved IS NOT NULL AND ${alias}.cost_units = 0)`;

/** The rank of an entry's fact for LATEST_FIRST, as a row value to compare: (kind, revision). */
export const FACT_RANK = (alias: string) =>
  `(CASE ${alias}.kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END, ${alias}.revision)`;

export function toEntry(row: EntryRow): LedgerEntry {
  return {
    trackId: row.track_id,
    kind: row.kind,
    clientId: row.client_id,
    ...(row.subject_sha256 !== null ? { subjectSha256: row.subject_sha256 } : {}),
    operation: row.operation,
    requestHandlingType: row.request_handling_type,
    status: row.status,
    charged: row.charged,
    costUnits: row.cost_units,
    createdAt: new Date(row.created_at).toISOString(),
    ...(row.completed_at !== null ? { completedAt: new Date(row.completed_at).toISOString() } : {}),
    ...(row.upstream_code !== null ? { upstreamCode: row.upstream_code } : {}),
    ...(row.upstream_message !== null ? { upstreamMessage: row.upstream_message } : {}),
    ...(row.request_id !== null ? { requestId: row.request_id } : {}),
    ...(row.revision > 0 ? { revision: row.revision } : {}),
    ...(row.reserved_units !== null
      ? {
          reservation: {
            units: row.reserved_units,
            budgets: row.reserved_budgets ?? [],
            daily: row.reserved_daily ?? '',
            monthly: row.reserved_monthly ?? '',
          },
        }
      : {}),
    ...(row.reused_from !== null ? { reusedFrom: row.reused_from } : {}),
    ...(row.units_saved !== null ? { unitsSaved: row.units_saved } : {}),
    ...(row.unit_price !== null && row.currency !== null ? { unitPrice: row.unit_price, currency: row.currency } : {}),
    ...(row.resolved_by !== null ? { resolvedBy: row.resolved_by } : {}),
  };
}

/**
 * An entry's fields in a fixed order: the export's columns (the CSV header). `entryRow` below
 * writes each of them (its type requires every field of LedgerEntry). The reservation, an
 * object, is in the NDJSON export only.
 */
export const ENTRY_FIELDS: ReadonlyArray<Exclude<keyof LedgerEntry, 'reservation'>> = [
  'trackId',
  'kind',
  'clientId',
  'subjectSha256',
  'operation',
  'requestHandlingType',
  'status',
  'charged',
  'costUnits',
  'createdAt',
  'completedAt',
  'upstreamCode',
  'requestId',
  'revision',
  'reusedFrom',
  'unitsSaved',
  'upstreamMessage',
  // Migration 9, at the end: other teams parse the columns before by position.
  'unitPrice',
  'currency',
  // Migration 10.
  'resolvedBy',
];

/**
 * An entry as the INSERT's JSON row: ENTRY_FIELDS only (`data` stays out). A plain object, so
 * JSON.stringify takes its fast path (with ENTRY_FIELDS as its allow-list it was a third of the
 * drainer's CPU per entry: docs/performance.md, "Ledger").
 */
export function entryRow(entry: QueuedEntry): Record<keyof LedgerEntry, unknown> {
  return {
    trackId: entry.trackId,
    kind: entry.kind,
    clientId: entry.clientId,
    subjectSha256: entry.subjectSha256,
    operation: entry.operation,
    requestHandlingType: entry.requestHandlingType,
    status: entry.status,
    charged: entry.charged,
    costUnits: entry.costUnits,
    createdAt: entry.createdAt,
    completedAt: entry.completedAt,
    // Checked again here: an entry queued before the check existed (Cluster queues built entries).
    upstreamCode: isInt4(entry.upstreamCode) ? entry.upstreamCode : undefined,
    upstreamMessage: entry.upstreamMessage,
    requestId: entry.requestId,
    revision: entry.revision,
    reservation: entry.reservation,
    reusedFrom: entry.reusedFrom,
    unitsSaved: entry.unitsSaved,
    unitPrice: entry.unitPrice,
    currency: entry.currency,
    resolvedBy: entry.resolvedBy,
  };
}

/** What an aggregate needs of the database: a transaction of its own (LedgerDatabase and PGlite alike). */
interface Transactional {
  transaction<T>(work: (tx: { query<R>(sql: string, params?: unknown[]): Promise<R[]> }) => Promise<T>): Promise<T>;
}

/**
 * An aggregate over a period of entries, in a transaction of its own with JIT off and room to
 * hash its groups: on 600 000 entries JIT compiled for 0.5 s, more than the query ran, and the
 * groups (days × clients × …) sorted on disk (docs/performance.md, "The console").
 */
export function aggregate<R>(db: Transactional, sql: string, params: unknown[]): Promise<R[]> {
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL jit = off');
    await tx.query("SET LOCAL work_mem = '32MB'");
    return tx.query<R>(sql, params);
  });
}
