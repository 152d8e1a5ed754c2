import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { ProblemException } from '../problem/problem.js';
import type { SqlQueries } from './ledger-database.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LedgerStore } from './ledger.store.js';
import { RESOLUTION_LISTENER, type ResolutionListener } from './resolution-listener.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';

/** Each list in the answer names at most this many trackIds (`truncated` says when more). */
export const LIST_CAP = 1_000;
/** trackIds sent to PostgreSQL per statement while the file streams in. */
const CHUNK = 5_000;
/** Resolutions read and told to the listener (budgets) per batch, after the commit. */
const RESOLUTION_BATCH = 500;
/**
 * The longest CSV record read (csv-parse `max_record_size`, characters): a trackId row is well
 * under it, and one overlong record (a field without its end) is refused, 400, not held whole.
 */
const MAX_RECORD_CHARS = 1_024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ReconciliationList {
  count: number;
  trackIds: string[];
  truncated: boolean;
}

/** The answer of POST /admin/reconciliations (docs/api.md §7). */
export interface ReconciliationReport {
  rows: number;
  /** On the list and in the ledger as charged (`yes`, or `possibly` not yet resolved). */
  chargedAndRecorded: ReconciliationList;
  /** On the list, never sent by this gateway: the credentials are used elsewhere (a security event). */
  chargedNotInLedger: ReconciliationList;
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
  /** What became of `unknown` entries absent from the list: resolved only when the request names its period. */
  unknownsAbsentFromList: 'resolvedNotCharged' | 'leftUnresolved';
  /** The period the ledger side was read for (given, or the list's inquiries first to last), UTC; `to` exclusive. */
  period: { from: string; to: string } | null;
}

/** The current state of each inquiry: the latest fact (reconciled > settled > overdue). */
const LATEST = `SELECT DISTINCT ON (e.track_id) e.*
  FROM ledger_entries e
  ORDER BY e.track_id, CASE e.kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END DESC`;

/**
 * The provider's list of charged trackIds against the ledger, streamed: the file is parsed
 * row by row (csv-parse) into a temporary table in chunks, and every comparison is SQL over
 * it, so memory holds a chunk and the capped lists, whatever the file's size. Idempotent: a
 * resolution is an entry unique by (trackId, kind), so the same file twice appends nothing the
 * second time (its unknowns then read as resolved, hence charged and recorded).
 */
@Injectable()
export class Reconciliations {
  private readonly logger = new Logger('Reconciliation');

  constructor(
    private readonly store: LedgerStore,
    private readonly metrics: LedgerMetrics,
    @Optional() @Inject(RESOLUTION_LISTENER) private readonly listener?: ResolutionListener,
  ) {}

  /**
   * `period`: the provider's billing period (from inclusive, to exclusive); unset, the span of
   * the listed inquiries the ledger knows (first to last, inclusive).
   */
  async reconcile(
    body: Readable,
    requestId?: string,
    period?: { from: Date; to: Date },
  ): Promise<ReconciliationReport> {
    await this.store.ready();
    const { report, span, newUnsent } = await this.store.db.transaction(async (tx) => {
      await tx.query('CREATE TEMP TABLE provider_list (track_id uuid PRIMARY KEY) ON COMMIT DROP');
      const rows = await this.load(tx, body);
      return this.compare(tx, rows, requestId, period);
    });
    // After the commit: the resolutions are facts now; budgets may release or confirm units.
    if (span) await this.tell(span);
    if (report.chargedNotInLedger.count > 0) {
      // Only those no earlier reconciliation found: the same file twice counts them once.
      this.metrics.unsentCharges.inc(newUnsent);
      this.logger.warn({
        msg: 'security: the provider charged trackIds this gateway never sent (credentials used elsewhere?)',
        event: 'reconciliation_unsent_charges',
        count: report.chargedNotInLedger.count,
        newlyFound: newUnsent,
        trackIds: report.chargedNotInLedger.trackIds.slice(0, 20),
        requestId,
      });
    }
    return report;
  }

  /** Streams the CSV into the temporary table; returns the data rows read. */
  private async load(tx: SqlQueries, body: Readable): Promise<number> {
    const parser = body.pipe(
      parse({
        columns: true,
        skip_empty_lines: true,
        trim: true,
        bom: true,
        max_record_size: MAX_RECORD_CHARS,
      }),
    );
    let rows = 0;
    let chunk: string[] = [];
    const flush = async () => {
      if (chunk.length === 0) return;
      await tx.query('INSERT INTO provider_list SELECT DISTINCT * FROM unnest($1::uuid[]) ON CONFLICT DO NOTHING', [
        chunk,
      ]);
      chunk = [];
    };
    try {
      for await (const record of parser as AsyncIterable<Record<string, string>>) {
        rows += 1;
        const trackId = record.trackId;
        if (trackId === undefined) throw invalid('The CSV needs a header row with a trackId column.');
        if (!UUID.test(trackId)) throw invalid(`Row ${rows + 1}: trackId is not a UUID.`);
        chunk.push(trackId.toLowerCase());
        if (chunk.length >= CHUNK) await flush();
      }
    } catch (error) {
      if (error instanceof ProblemException) throw error;
      // csv-parse's errors name the line and the rule, never a cell's content.
      throw invalid(`The body is not valid CSV: ${(error as { code?: string }).code ?? 'parse error'}.`);
    }
    await flush();
    // Statistics for the planner: without them it guesses the temporary table's size.
    await tx.query('ANALYZE provider_list');
    return rows;
  }

  /**
   * Tells the listener (budgets) every resolution in `span`, read back from the `reconciled`
   * entries in keyset batches (created_at, track_id): memory holds one batch, and a resend of
   * the same file tells again what a failure (Redis down) left untold, though it appends
   * nothing. Telling twice is harmless: a budget resolves a trackId once (its `resolved` marker).
   * Reconciled entries in the span that this file did not resolve are facts too, told alike.
   */
  private async tell(span: { from: Date; to: Date }): Promise<void> {
    if (!this.listener) return;
    let after: { createdAt: Date; trackId: string } | null = null;
    for (;;) {
      const batch: ResolvedRow[] = await this.store.db.query<ResolvedRow>(
        `SELECT track_id::text AS track_id, client_id, operation, request_handling_type, created_at, charged
         FROM ledger_entries
         WHERE kind = 'reconciled' AND created_at >= $1 AND created_at < $2
           AND ($3::timestamptz IS NULL OR (created_at, track_id) > ($3, $4::uuid))
         ORDER BY created_at, track_id LIMIT ${RESOLUTION_BATCH}`,
        [span.from, span.to, after?.createdAt ?? null, after?.trackId ?? null],
      );
      for (const row of batch) {
        if (row.charged === 'possibly') continue;
        await this.listener.resolved({
          trackId: row.track_id,
          clientId: row.client_id,
          operation: row.operation,
          requestHandlingType: row.request_handling_type,
          createdAt: new Date(row.created_at).toISOString(),
          charged: row.charged,
        });
      }
      if (batch.length < RESOLUTION_BATCH) return;
      const last = batch[batch.length - 1];
      after = { createdAt: new Date(last.created_at), trackId: last.track_id };
    }
  }

  private async compare(
    tx: SqlQueries,
    rows: number,
    requestId: string | undefined,
    given?: { from: Date; to: Date },
  ): Promise<{ report: ReconciliationReport; span: { from: Date; to: Date } | null; newUnsent: number }> {
    const list = async (sql: string, params: unknown[] = []): Promise<ReconciliationList> => {
      const [{ n }] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) q`, params);
      const ids = await tx.query<{ track_id: string }>(
        `SELECT track_id::text FROM (${sql}) q ORDER BY track_id LIMIT ${LIST_CAP}`,
        params,
      );
      return { count: n, trackIds: ids.map((r) => r.track_id), truncated: n > LIST_CAP };
    };
    const latestOfList = `SELECT l.* FROM provider_list p JOIN LATERAL (
        SELECT * FROM ledger_entries e WHERE e.track_id = p.track_id
        ORDER BY CASE e.kind WHEN 'reconciled' THEN 2 WHEN 'settled' THEN 1 ELSE 0 END DESC LIMIT 1) l ON true`;

    // Read before the resolutions are appended: an unknown resolved now is listed as resolved
    // only (the same file again finds it charged and recorded).
    const chargedAndRecorded = await list(
      `${latestOfList.replace('SELECT l.*', 'SELECT l.track_id')} WHERE l.charged <> 'no' AND l.status <> 'unknown'`,
    );
    const unknown = await list(`${latestOfList.replace('SELECT l.*', 'SELECT l.track_id')} WHERE l.status = 'unknown'`);
    await tx.query(
      `INSERT INTO ledger_entries (track_id, kind, client_id, subject_sha256, operation, request_handling_type,
         status, charged, cost_units, created_at, completed_at, upstream_code, request_id)
       SELECT l.track_id, 'reconciled', l.client_id, l.subject_sha256, l.operation, l.request_handling_type,
         'succeeded', 'yes', l.cost_units, l.created_at, l.completed_at, l.upstream_code, $1
       FROM (${latestOfList}) l WHERE l.status = 'unknown'
       ON CONFLICT DO NOTHING`,
      [requestId ?? null],
    );
    // With its period named, the provider's list is the whole of what it charged in it: an
    // `unknown` of that period absent from the list was not charged (docs/api.md §7). Without
    // one, absence proves nothing (the list may cover part of a period): left unresolved.
    const absentUnknown = `SELECT l.* FROM (${LATEST.replace('ORDER BY', 'WHERE e.created_at >= $1 AND e.created_at < $2 ORDER BY')}) l
       WHERE l.status = 'unknown' AND NOT EXISTS (SELECT 1 FROM provider_list p WHERE p.track_id = l.track_id)`;
    let resolvedNotCharged: ReconciliationList = { count: 0, trackIds: [], truncated: false };
    if (given) {
      resolvedNotCharged = await list(absentUnknown.replace('SELECT l.*', 'SELECT l.track_id'), [given.from, given.to]);
      await tx.query(
        `INSERT INTO ledger_entries (track_id, kind, client_id, subject_sha256, operation, request_handling_type,
           status, charged, cost_units, created_at, completed_at, upstream_code, request_id)
         SELECT l.track_id, 'reconciled', l.client_id, l.subject_sha256, l.operation, l.request_handling_type,
           'failed', 'no', l.cost_units, l.created_at, l.completed_at, l.upstream_code, $3
         FROM (${absentUnknown}) l
         ON CONFLICT DO NOTHING`,
        [given.from, given.to, requestId ?? null],
      );
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
      chargedAndRecorded,
      chargedNotInLedger: await list(
        'SELECT p.track_id FROM provider_list p WHERE NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.track_id = p.track_id)',
      ),
      recordedNotCharged: period
        ? await list(
            `SELECT l.track_id FROM (${LATEST.replace('ORDER BY', 'WHERE e.created_at >= $1 AND e.created_at < $2 ORDER BY')}) l
             WHERE l.charged = 'yes' AND NOT EXISTS (SELECT 1 FROM provider_list p WHERE p.track_id = l.track_id)`,
            [period.from, period.to],
          )
        : { count: 0, trackIds: [], truncated: false },
      chargedButRecordedNotCharged: await list(
        `${latestOfList.replace('SELECT l.*', 'SELECT l.track_id')} WHERE l.charged = 'no'`,
      ),
      resolved: unknown,
      resolvedNotCharged,
      unknownsAbsentFromList: given ? 'resolvedNotCharged' : 'leftUnresolved',
      period: period ? { from: period.from.toISOString(), to: period.to.toISOString() } : null,
    };
    const [{ n: newUnsent }] = await tx.query<{ n: number }>(
      `WITH found AS (
         INSERT INTO ledger_unsent_charges (track_id, request_id)
         SELECT p.track_id, $1 FROM provider_list p
         WHERE NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.track_id = p.track_id)
         ON CONFLICT DO NOTHING RETURNING 1)
       SELECT count(*)::int AS n FROM found`,
      [requestId ?? null],
    );
    return { report, span: resolutionSpan, newUnsent };
  }
}

interface ResolvedRow {
  track_id: string;
  client_id: string;
  operation: InquiryOperation;
  request_handling_type: RequestHandlingType;
  created_at: Date;
  charged: 'yes' | 'no' | 'possibly';
}

function invalid(detail: string): ProblemException {
  return new ProblemException('validation_failed', detail);
}
