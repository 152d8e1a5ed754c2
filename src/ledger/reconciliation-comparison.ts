import { createHash } from 'node:crypto';
import type { SqlQueries } from './ledger-database.js';
import type { Charged } from './ledger-entry.js';
import { LATEST_FIRST } from './ledger.store.js';
import { appendResolutions } from './resolution-append.js';

/** What a list of inquiries the ledger has selects: its units and the price each recorded (reconciliation money). */
const PRICED = 'l.track_id, l.cost_units AS units, l.unit_price AS price, l.currency';

/** Each list in the answer names at most this many trackIds (`truncated` says when more). */
export const LIST_CAP = 1_000;

export interface ReconciliationList {
  count: number;
  trackIds: string[];
  truncated: boolean;
  /** For inquiries the ledger has: their units (a failure's too: what a correction moves), all of them. */
  units?: number;
  /** Those units at the price each recorded, by currency, exact decimals; unpriced units are not in it. */
  money?: Array<{ currency: string; amount: string }>;
}

/** The answer of POST /admin/reconciliations (docs/api.md §7). */
export interface ReconciliationReport {
  rows: number;
  /** True when nothing was written (`dryRun=true`): the same answer a real run gives. */
  dryRun: boolean;
  /** On the list and in the ledger as charged (`yes`, or `possibly` not yet resolved). */
  chargedAndRecorded: ReconciliationList;
  /** On the list, never sent by this gateway: the credentials are used elsewhere (a security event). */
  chargedNotInLedger: ReconciliationList;
  /**
   * On the list, not in the ledger because the database refused the entry and it was parked
   * (GET /admin/ledger/parked): sent by this gateway, so not a security event.
   */
  parked: ReconciliationList;
  /** In the ledger as charged (`yes`) within the list's period, but not on the list. */
  recordedNotCharged: ReconciliationList;
  /** On the list, recorded by this gateway as not charged (`no`): the provider's word against ours. */
  chargedButRecordedNotCharged: ReconciliationList;
  /** `unknown` entries the list resolves: a `reconciled` entry (succeeded, charged) appended now. */
  resolved: ReconciliationList;
  /**
   * `unknown` entries within the given period (`from`/`to`) absent from the list: a `reconciled`
   * entry (`failed`, charged `no`) appended now. Empty without a given period.
   */
  resolvedNotCharged: ReconciliationList;
  /** Resolved earlier as not charged, on this list: a correction (charged) appended, the history kept. */
  correctedToCharged: ReconciliationList;
  /** Resolved earlier as charged, absent from this list of its named period: a correction (not charged) appended. */
  correctedToNotCharged: ReconciliationList;
  /** What became of `unknown` entries absent from the list: resolved only when the request names its period. */
  unknownsAbsentFromList: 'resolvedNotCharged' | 'leftUnresolved';
  /** The period the ledger side was read for (given, or the list's inquiries first to last), UTC; `to` exclusive. */
  period: { from: string; to: string } | null;
  /**
   * What this run changes and reports, hashed: the entries it appends (trackId, revision,
   * verdict) and the report. A confirmation sends a dry run's digest back and is applied only if
   * its own is the same (otherwise 409 `reconciliation_changed`, rolled back).
   */
  digest?: string;
}

export interface Compared {
  report: ReconciliationReport;
  /** The span whose resolutions are told to the budgets (the listed inquiries' and the given period). */
  span: { from: Date; to: Date } | null;
  /** Unsent charges no earlier reconciliation found. */
  newUnsent: number;
}

/**
 * Compares the list loaded into the temporary table provider_list with the ledger, inside the
 * caller's transaction, and appends the resolutions and corrections it finds.
 */
export async function compareWithLedger(
  tx: SqlQueries,
  rows: number,
  requestId: string | null,
  given: { from: Date; to: Date } | undefined,
  dryRun: boolean,
): Promise<Compared> {
  const list = async (sql: string, params: unknown[] = []): Promise<ReconciliationList> => {
    const priced = sql.includes(PRICED);
    // One scan for the count, the units and the money (a group per currency; unpriced: NULL).
    const groups = await tx.query<{ currency: string | null; n: number; units: string | null; amount: string | null }>(
      priced
        ? `SELECT q.currency, count(*)::int AS n, sum(q.units)::text AS units, sum(q.units * q.price)::text AS amount
           FROM (${sql}) q GROUP BY q.currency ORDER BY q.currency`
        : `SELECT NULL AS currency, count(*)::int AS n, NULL AS units, NULL AS amount FROM (${sql}) q`,
      params,
    );
    const n = groups.reduce((total, group) => total + group.n, 0);
    const ids =
      n === 0
        ? []
        : await tx.query<{ track_id: string }>(
            `SELECT track_id::text FROM (${sql}) q ORDER BY track_id LIMIT ${LIST_CAP}`,
            params,
          );
    const found = { count: n, trackIds: ids.map((r) => r.track_id), truncated: n > LIST_CAP };
    if (!priced) return found;
    const units = groups.reduce((total, group) => total + Number(group.units ?? 0), 0);
    const money = groups.flatMap((g) =>
      g.currency !== null && g.amount !== null ? [{ currency: g.currency, amount: g.amount }] : [],
    );
    return { ...found, units, money };
  };
  const none: ReconciliationList = { count: 0, trackIds: [], truncated: false };
  // The latest fact of each listed inquiry, and of each inquiry of a period.
  const latestOfList = `SELECT l.* FROM provider_list p JOIN LATERAL (
      SELECT * FROM ledger_entries e WHERE e.track_id = p.track_id ORDER BY ${LATEST_FIRST} LIMIT 1) l ON true`;
  const latestIn = (from: string, to: string) => `SELECT DISTINCT ON (e.track_id) e.* FROM ledger_entries e
      WHERE e.created_at >= ${from} AND e.created_at < ${to} ORDER BY e.track_id, ${LATEST_FIRST}`;
  const idsOf = (sql: string) => sql.replace('SELECT l.*', `SELECT ${PRICED}`);
  // Listed, with no entry: parked (the database refused it; ledger_parked.track_id is the
  // entry's text) or never sent by this gateway.
  const notInLedger = 'NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.track_id = p.track_id)';
  const parkedHere = 'EXISTS (SELECT 1 FROM ledger_parked k WHERE lower(k.track_id) = p.track_id::text)';
  const append = (status: 'succeeded' | 'failed', charged: Charged, source: string, params: unknown[]) =>
    appendResolutions(tx, { status, charged }, source, params, requestId, 'reconciliation');

  // Read before anything is appended: an unknown resolved now is listed as resolved only
  // (the same file again finds it charged and recorded).
  const chargedAndRecorded = await list(`${idsOf(latestOfList)} WHERE l.charged <> 'no' AND l.status <> 'unknown'`);
  const resolved = await list(`${idsOf(latestOfList)} WHERE l.status = 'unknown'`);
  const correctedToCharged = await list(`${idsOf(latestOfList)} WHERE l.kind = 'reconciled' AND l.charged = 'no'`);
  if (resolved.count + correctedToCharged.count > 0) {
    await append(
      'succeeded',
      'yes',
      `${latestOfList} WHERE l.status = 'unknown' OR (l.kind = 'reconciled' AND l.charged = 'no')`,
      [],
    );
  }
  // With its period named, the provider's list is the whole of what it charged in it: an
  // `unknown` of that period absent from the list was not charged, and a resolution as
  // charged is corrected (docs/api.md §7). Without one, absence proves nothing (the list may
  // cover part of a period): left as it is.
  let resolvedNotCharged = none;
  let correctedToNotCharged = none;
  if (given) {
    const absent = `SELECT l.* FROM (${latestIn('$1', '$2')}) l
       WHERE NOT EXISTS (SELECT 1 FROM provider_list p WHERE p.track_id = l.track_id)`;
    const period = [given.from, given.to];
    resolvedNotCharged = await list(`${idsOf(absent)} AND l.status = 'unknown'`, period);
    correctedToNotCharged = await list(`${idsOf(absent)} AND l.kind = 'reconciled' AND l.charged = 'yes'`, period);
    if (resolvedNotCharged.count + correctedToNotCharged.count > 0) {
      await append(
        'failed',
        'no',
        `${absent} AND (l.status = 'unknown' OR (l.kind = 'reconciled' AND l.charged = 'yes'))`,
        period,
      );
    }
  }
  const [span] = await tx.query<{ from: Date | null; to: Date | null }>(
    `SELECT min(e.created_at) AS from, max(e.created_at) AS to
     FROM provider_list p JOIN ledger_entries e ON e.track_id = p.track_id`,
  );
  const listed =
    span.from && span.to ? { from: new Date(span.from), to: new Date(new Date(span.to).getTime() + 1) } : null;
  const period = given ?? listed;
  // The resolutions to tell: the listed inquiries' span and the given period, together.
  const resolutionSpan =
    given && listed
      ? {
          from: new Date(Math.min(given.from.getTime(), listed.from.getTime())),
          to: new Date(Math.max(given.to.getTime(), listed.to.getTime())),
        }
      : period;
  const report: ReconciliationReport = {
    rows,
    dryRun,
    chargedAndRecorded,
    chargedNotInLedger: await list(`SELECT p.track_id FROM provider_list p WHERE ${notInLedger} AND NOT ${parkedHere}`),
    parked: await list(`SELECT p.track_id FROM provider_list p WHERE ${notInLedger} AND ${parkedHere}`),
    // After the appends: a correction to not charged is no longer recorded as charged.
    recordedNotCharged: period
      ? await list(
          `SELECT ${PRICED} FROM (${latestIn('$1', '$2')}) l
           WHERE l.charged = 'yes' AND NOT EXISTS (SELECT 1 FROM provider_list p WHERE p.track_id = l.track_id)`,
          [period.from, period.to],
        )
      : none,
    // After the appends: only settlements recorded `no` are left (a resolution was corrected).
    chargedButRecordedNotCharged: await list(`${idsOf(latestOfList)} WHERE l.charged = 'no'`),
    resolved,
    resolvedNotCharged,
    correctedToCharged,
    correctedToNotCharged,
    unknownsAbsentFromList: given ? 'resolvedNotCharged' : 'leftUnresolved',
    period: period ? { from: period.from.toISOString(), to: period.to.toISOString() } : null,
  };
  const [{ n: newUnsent }] = await tx.query<{ n: number }>(
    `WITH found AS (
       INSERT INTO ledger_unsent_charges (track_id, request_id)
       SELECT p.track_id, $1 FROM provider_list p WHERE ${notInLedger} AND NOT ${parkedHere}
       ON CONFLICT DO NOTHING RETURNING 1)
     SELECT count(*)::int AS n FROM found`,
    [requestId],
  );
  return { report, span: resolutionSpan, newUnsent };
}

/**
 * The digest of a run, inside its transaction: the entries it appended (found by its request id,
 * among the few reconciled entries), the report, less what differs between a dry run and its
 * confirmation (`dryRun`, `digest`), and the list's trackIds in the file's order (the unsent
 * charges it records are shown only up to LIST_CAP).
 */
export async function reportDigest(
  tx: SqlQueries,
  report: ReconciliationReport,
  requestId: string | null,
  list: { chunks: readonly Buffer[] },
): Promise<string> {
  const appended = await tx.query<{ row: string }>(
    `SELECT e.track_id::text || ':' || e.revision || ':' || e.charged AS row FROM ledger_entries e
     WHERE e.kind = 'reconciled' AND e.resolved_by = 'reconciliation' AND e.request_id IS NOT DISTINCT FROM $1
       AND e.recorded_at = now()
     ORDER BY 1`,
    [requestId],
  );
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { dryRun, digest, ...shown } = report;
  const hash = createHash('sha256').update(JSON.stringify(shown));
  for (const { row } of appended) hash.update(`\n${row}`);
  // The list itself: what it records past the report's capped lists (unsent charges) is bound too.
  hash.update('\nlist');
  for (const chunk of list.chunks) hash.update(chunk);
  return hash.digest('base64url');
}
