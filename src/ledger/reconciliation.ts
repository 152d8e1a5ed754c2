import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { pipeline, type Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import type { BudgetMove } from '../budget/budget.store.js';
import { ProblemException } from '../problem/problem.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { describeLedgerFailure } from './ledger-call.js';
import type { SqlQueries } from './ledger-database.js';
import type { Charged } from './ledger-entry.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LATEST_FIRST, LedgerStore } from './ledger.store.js';
import { RESOLUTION_LISTENER, type ResolutionListener } from './resolution-listener.js';

/** Each list in the answer names at most this many trackIds (`truncated` says when more). */
export const LIST_CAP = 1_000;
/**
 * The most data rows one list may hold: 32 MiB of trackIds (16 bytes each) while it is checked.
 * Past it, 413 `payload_too_large` (the body is larger than the route takes, as any body limit;
 * nothing in it is wrong): a provider's list is split by period (`from`/`to`).
 */
export const MAX_ROWS = 2_000_000;
/** trackIds sent to PostgreSQL per statement (unnest of one chunk). */
const CHUNK = 5_000;
/** Resolutions read and told to the listener (budgets) per batch, after the commit. */
const RESOLUTION_BATCH = 500;
/**
 * The longest CSV record read (csv-parse `max_record_size`, characters): a trackId row is well
 * under it, and one overlong record (a field without its end) is refused, 400, not held whole.
 */
const MAX_RECORD_CHARS = 1_024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** pg_advisory_xact_lock key ('vgw-reco'): replicas compare and append one list at a time. */
const RECONCILE_LOCK = 0x7667772d7265636fn;
/** Seconds a refused concurrent upload is told to wait (Retry-After). */
const BUSY_RETRY_SECONDS = 5;

export interface ReconciliationList {
  count: number;
  trackIds: string[];
  truncated: boolean;
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
}

export interface ReconcileOptions {
  requestId?: string;
  /** The provider's billing period (from inclusive, to exclusive). */
  period?: { from: Date; to: Date };
  /** Answer the same report and write nothing (the transaction is rolled back). */
  dryRun?: boolean;
}

/** A validated list: trackIds as 16-byte values, CHUNK a buffer, so memory is 16 bytes a row. */
interface ProviderList {
  rows: number;
  chunks: Buffer[];
}

/** Thrown out of a dry run's transaction so that it rolls back, carrying its result. */
class DryRun extends Error {
  constructor(readonly result: Compared) {
    super('dry run: rolled back');
  }
}

interface Compared {
  report: ReconciliationReport;
  span: { from: Date; to: Date } | null;
  newUnsent: number;
}

/**
 * The provider's list of charged trackIds against the ledger. The whole file is read and
 * validated first (no transaction is open meanwhile, so a slow upload holds no connection),
 * held as 16-byte trackIds; then one short transaction loads them into a temporary table
 * (unnest, by chunk) and every comparison is SQL over it. One at a time per process (a second
 * upload meanwhile is refused, 429 with Retry-After), and across replicas (an advisory lock).
 *
 * Facts are appended, never changed: a resolution is a `reconciled` entry of revision 1, and a
 * later list that contradicts it appends revision 2, and so on. A list that agrees with the
 * latest resolution appends nothing: the same file twice writes nothing the second time.
 */
@Injectable()
export class Reconciliations {
  private readonly logger = new Logger('Reconciliation');
  private running = false;

  constructor(
    private readonly store: LedgerStore,
    private readonly metrics: LedgerMetrics,
    @Optional() @Inject(RESOLUTION_LISTENER) private readonly listener?: ResolutionListener,
  ) {}

  /**
   * `period`: the provider's billing period; unset, the span of the listed inquiries the ledger
   * knows (first to last, inclusive), and unknowns absent from the list are left unresolved.
   */
  async reconcile(body: Readable, options: ReconcileOptions = {}): Promise<ReconciliationReport> {
    if (this.running) {
      throw new ProblemException(
        'rate_limited',
        'A reconciliation is already running on this instance; send the list again once it has answered.',
        { headers: { [RETRY_AFTER_HEADER]: String(BUSY_RETRY_SECONDS) } },
      );
    }
    this.running = true;
    try {
      return await this.run(body, options);
    } finally {
      this.running = false;
    }
  }

  private async run(body: Readable, options: ReconcileOptions): Promise<ReconciliationReport> {
    const { requestId, period, dryRun = false } = options;
    const list = await readList(body);
    await this.store.ready();
    const { report, span, newUnsent } = await this.store.db
      .transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [RECONCILE_LOCK.toString()]);
        await tx.query('CREATE TEMP TABLE provider_list (track_id uuid PRIMARY KEY) ON COMMIT DROP');
        for (const chunk of list.chunks) {
          await tx.query('INSERT INTO provider_list SELECT * FROM unnest($1::uuid[]) ON CONFLICT DO NOTHING', [
            trackIdsOf(chunk),
          ]);
        }
        // Statistics for the planner: without them it guesses the temporary table's size.
        await tx.query('ANALYZE provider_list');
        const compared = await this.compare(tx, list.rows, requestId ?? null, period, dryRun);
        if (dryRun) throw new DryRun(compared);
        return compared;
      })
      .catch((error: unknown) => {
        if (error instanceof DryRun) return error.result;
        throw error;
      });
    if (dryRun) return report;
    if (report.parked.count > 0) {
      this.logger.warn({
        msg: 'the provider charged trackIds whose ledger entries were parked (GET /admin/ledger/parked)',
        event: 'reconciliation_parked_charges',
        count: report.parked.count,
        trackIds: report.parked.trackIds.slice(0, 20),
        requestId,
      });
    }
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
    // After the commit, the logs and the metric (a resend finds no new unsent charge to count):
    // the resolutions are facts now; budgets move by what each reserved.
    if (span) await this.tellOrOwe(span, requestId);
    return report;
  }

  /**
   * A failure of the budget moves (Redis down, or the ledger while recording them) comes after
   * the commit: the answer says the resolutions are recorded and their moves pending, never the
   * inquiry's "nothing was sent to the verification service" (reconciliation.integration.spec.ts,
   * "Redis lost its data"). The same file sent again appends nothing and applies them (tell).
   */
  private async tellOrOwe(span: { from: Date; to: Date }, requestId: string | undefined): Promise<void> {
    try {
      await this.tell(span);
    } catch (error) {
      if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) throw error;
      this.logger.error({
        msg: 'reconciliation recorded; its budget moves are pending until the same file is sent again',
        event: 'reconciliation_budget_moves_pending',
        cause: describeLedgerFailure(error),
        requestId,
      });
      throw new ProblemException(
        'store_unavailable',
        'The list was compared and its resolutions are recorded in the ledger, but the budget moves they make ' +
          'are pending: a store was unavailable. Send the same file again: it appends nothing more and applies ' +
          'the pending moves (its report then lists these inquiries as already recorded).',
        { headers: { [RETRY_AFTER_HEADER]: String(BUSY_RETRY_SECONDS) } },
      );
    }
  }

  /**
   * The outbox of budget moves: every `reconciled` entry in `span` with a recorded reservation
   * and no row in ledger_budget_moves is told to the listener (budgets, Redis), then recorded
   * there. So a resend after a Redis failure applies what was left, and a Redis that lost its
   * data replays nothing already applied (test/reconciliation.integration.spec.ts). Between the
   * Redis move and its row a crash leaves the move unrecorded: Redis's per-(trackId, revision)
   * marker then stops a second application, unless Redis too lost its data in between (the
   * one window left: the move is applied again, to the windows it names if they still exist).
   * Keyset batches (created_at, track_id, revision): memory holds one batch.
   */
  private async tell(span: { from: Date; to: Date }): Promise<void> {
    if (!this.listener) return;
    let after: { createdAt: Date; trackId: string; revision: number } | null = null;
    for (;;) {
      const batch: MoveRow[] = await this.store.db.query<MoveRow>(
        `SELECT e.track_id::text AS track_id, e.revision, e.created_at, e.charged, p.charged AS previous,
           e.reserved_units, e.reserved_budgets, e.reserved_daily, e.reserved_monthly
         FROM ledger_entries e
         LEFT JOIN ledger_entries p ON p.track_id = e.track_id AND p.created_at = e.created_at
           AND p.kind = 'reconciled' AND p.revision = e.revision - 1
         WHERE e.kind = 'reconciled' AND e.created_at >= $1 AND e.created_at < $2 AND e.reserved_units IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM ledger_budget_moves m WHERE m.track_id = e.track_id AND m.revision = e.revision)
           AND ($3::timestamptz IS NULL OR (e.created_at, e.track_id, e.revision) > ($3, $4::uuid, $5::int))
         ORDER BY e.created_at, e.track_id, e.revision LIMIT ${RESOLUTION_BATCH}`,
        [span.from, span.to, after?.createdAt ?? null, after?.trackId ?? null, after?.revision ?? 0],
      );
      const applied: BudgetMove[] = [];
      try {
        for (const row of batch) {
          const move = moveOf(row);
          await this.listener.resolved(move);
          applied.push(move);
        }
      } finally {
        // What Redis took is recorded even when a later move of the batch failed.
        if (applied.length > 0) await this.record(applied);
      }
      if (batch.length < RESOLUTION_BATCH) return;
      const last = batch[batch.length - 1];
      after = { createdAt: new Date(last.created_at), trackId: last.track_id, revision: last.revision };
    }
  }

  private async record(moves: BudgetMove[]): Promise<void> {
    await this.store.db.query(
      `INSERT INTO ledger_budget_moves (track_id, revision, units, budgets, windows)
       SELECT m.t, m.r, m.u, ARRAY(SELECT json_array_elements_text(m.b)), ARRAY[m.d, m.m]
       FROM json_to_recordset($1::json) AS m(t uuid, r int, u int, b json, d text, m text)
       ON CONFLICT DO NOTHING`,
      [
        JSON.stringify(
          moves.map((move) => ({
            t: move.trackId,
            r: move.revision,
            u: move.units,
            b: move.budgets,
            d: move.daily,
            m: move.monthly,
          })),
        ),
      ],
    );
  }

  private async compare(
    tx: SqlQueries,
    rows: number,
    requestId: string | null,
    given: { from: Date; to: Date } | undefined,
    dryRun: boolean,
  ): Promise<Compared> {
    const list = async (sql: string, params: unknown[] = []): Promise<ReconciliationList> => {
      const [{ n }] = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) q`, params);
      const ids = await tx.query<{ track_id: string }>(
        `SELECT track_id::text FROM (${sql}) q ORDER BY track_id LIMIT ${LIST_CAP}`,
        params,
      );
      return { count: n, trackIds: ids.map((r) => r.track_id), truncated: n > LIST_CAP };
    };
    const none: ReconciliationList = { count: 0, trackIds: [], truncated: false };
    // The latest fact of each listed inquiry, and of each inquiry of a period.
    const latestOfList = `SELECT l.* FROM provider_list p JOIN LATERAL (
        SELECT * FROM ledger_entries e WHERE e.track_id = p.track_id ORDER BY ${LATEST_FIRST} LIMIT 1) l ON true`;
    const latestIn = (from: string, to: string) => `SELECT DISTINCT ON (e.track_id) e.* FROM ledger_entries e
        WHERE e.created_at >= ${from} AND e.created_at < ${to} ORDER BY e.track_id, ${LATEST_FIRST}`;
    const idsOf = (sql: string) => sql.replace('SELECT l.*', 'SELECT l.track_id');
    // Listed, with no entry: parked (the database refused it; ledger_parked.track_id is the
    // entry's text) or never sent by this gateway.
    const notInLedger = 'NOT EXISTS (SELECT 1 FROM ledger_entries e WHERE e.track_id = p.track_id)';
    const parkedHere = 'EXISTS (SELECT 1 FROM ledger_parked k WHERE lower(k.track_id) = p.track_id::text)';
    // A resolution (revision 1 after an unknown) or a correction (the next revision), with the
    // inquiry's facts and its recorded reservation copied from the entry it follows.
    const append = (status: 'succeeded' | 'failed', charged: Charged, source: string, params: unknown[]) =>
      tx.query(
        `INSERT INTO ledger_entries (track_id, kind, revision, client_id, subject_sha256, operation,
           request_handling_type, status, charged, cost_units, created_at, completed_at, upstream_code, request_id,
           reserved_units, reserved_budgets, reserved_daily, reserved_monthly, reused_from, units_saved)
         SELECT l.track_id, 'reconciled', l.revision + 1, l.client_id, l.subject_sha256, l.operation,
           l.request_handling_type, '${status}', '${charged}', l.cost_units, l.created_at, l.completed_at,
           l.upstream_code, $${params.length + 1}, l.reserved_units, l.reserved_budgets, l.reserved_daily,
           l.reserved_monthly, l.reused_from, l.units_saved
         FROM (${source}) l
         ON CONFLICT DO NOTHING`,
        [...params, requestId],
      );

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
      chargedNotInLedger: await list(
        `SELECT p.track_id FROM provider_list p WHERE ${notInLedger} AND NOT ${parkedHere}`,
      ),
      parked: await list(`SELECT p.track_id FROM provider_list p WHERE ${notInLedger} AND ${parkedHere}`),
      // After the appends: a correction to not charged is no longer recorded as charged.
      recordedNotCharged: period
        ? await list(
            `SELECT l.track_id FROM (${latestIn('$1', '$2')}) l
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
}

/**
 * Reads and validates the whole CSV before anything is written: a header row with a `trackId`
 * column and at least one row, every trackId a UUID, at most MAX_ROWS rows; otherwise a
 * problem (400 validation_failed, 413 payload_too_large) and nothing is written.
 */
async function readList(body: Readable): Promise<ProviderList> {
  const parser = parse({
    columns: (header: string[]) => {
      if (!header.includes('trackId')) throw invalid('The CSV needs a header row with a trackId column.');
      return header;
    },
    skip_empty_lines: true,
    trim: true,
    bom: true,
    max_record_size: MAX_RECORD_CHARS,
  });
  // pipeline, not pipe: a body that errors or closes before its end (the client gone) destroys
  // the parser, so the read below rejects and the one-at-a-time guard is released
  // (reconciliation.integration.spec.ts, "body fails mid-way"). Its error surfaces there.
  pipeline(body, parser, () => undefined);
  const chunks: Buffer[] = [];
  let chunk = Buffer.allocUnsafe(CHUNK * 16);
  let inChunk = 0;
  let rows = 0;
  try {
    for await (const record of parser as AsyncIterable<Record<string, string>>) {
      rows += 1;
      if (rows > MAX_ROWS) {
        throw new ProblemException(
          'payload_too_large',
          `The list holds more than ${MAX_ROWS} rows: send it in parts, each with its period (from, to).`,
        );
      }
      const trackId = record.trackId;
      if (trackId === undefined || !UUID.test(trackId)) throw invalid(`Row ${rows + 1}: trackId is not a UUID.`);
      chunk.write(trackId.replaceAll('-', ''), inChunk * 16, 16, 'hex');
      inChunk += 1;
      if (inChunk === CHUNK) {
        chunks.push(chunk);
        chunk = Buffer.allocUnsafe(CHUNK * 16);
        inChunk = 0;
      }
    }
  } catch (error) {
    if (error instanceof ProblemException) throw error;
    if (!(error instanceof CsvError)) {
      throw invalid('The body could not be read to its end (the upload was interrupted). Nothing was written.');
    }
    // csv-parse's errors name the line and the rule, never a cell's content.
    throw invalid(`The body is not valid CSV: ${(error as { code?: string }).code ?? 'parse error'}.`);
  }
  if (inChunk > 0) chunks.push(chunk.subarray(0, inChunk * 16));
  if (rows === 0) {
    throw invalid(
      'The list has no rows: a header row with a trackId column and at least one trackId are needed. Nothing was written.',
    );
  }
  return { rows, chunks };
}

/** A chunk's trackIds as UUID text, for unnest($1::uuid[]). */
function trackIdsOf(chunk: Buffer): string[] {
  const ids: string[] = [];
  for (let at = 0; at < chunk.length; at += 16) {
    const hex = chunk.toString('hex', at, at + 16);
    ids.push(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
  }
  return ids;
}

interface MoveRow {
  track_id: string;
  revision: number;
  created_at: Date;
  charged: Charged;
  previous: Charged | null;
  reserved_units: number;
  reserved_budgets: string[];
  reserved_daily: string;
  reserved_monthly: string;
}

/** Spent counts `yes` and `possibly` (an unknown is kept as spent), not `no`. */
const counted = (charged: Charged | null): number => (charged === 'no' ? 0 : 1);

/**
 * A resolution's move: the difference its verdict makes to spent over the fact it follows (the
 * unknown, `possibly`, before revision 1), times exactly the units recorded with the inquiry.
 */
function moveOf(row: MoveRow): BudgetMove {
  const before = row.revision === 1 ? 'possibly' : row.previous;
  return {
    trackId: row.track_id,
    revision: row.revision,
    charged: row.charged !== 'no',
    units: row.reserved_units * (counted(row.charged) - counted(before)),
    budgets: row.reserved_budgets,
    daily: row.reserved_daily,
    monthly: row.reserved_monthly,
  };
}

function invalid(detail: string): ProblemException {
  return new ProblemException('validation_failed', detail);
}
