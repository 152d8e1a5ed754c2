import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ProblemException } from '../problem/problem.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { describeLedgerFailure } from './ledger-call.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LedgerStore } from './ledger.store.js';
import { readList, trackIdsOf } from './provider-list.js';
import {
  compareWithLedger,
  reportDigest,
  type Compared,
  type ReconciliationReport,
} from './reconciliation-comparison.js';
import { RESOLUTION_LISTENER, type ResolutionListener } from './resolution-listener.js';
import { ResolutionMoves } from './resolution-moves.js';
import { recordAction, type Operator } from './operator-actions.js';

export { MAX_ROWS } from './provider-list.js';
export { LIST_CAP, type ReconciliationList, type ReconciliationReport } from './reconciliation-comparison.js';

/** pg_advisory_xact_lock key ('vgw-reco'): replicas compare and append one list at a time. */
export const RECONCILE_LOCK = 0x7667772d7265636fn;
/** Seconds a refused concurrent upload is told to wait (Retry-After). */
const BUSY_RETRY_SECONDS = 5;

export interface ReconcileOptions {
  requestId?: string;
  /** The provider's billing period (from inclusive, to exclusive). */
  period?: { from: Date; to: Date };
  /** Answer the same report and write nothing (the transaction is rolled back). */
  dryRun?: boolean;
  /** Who asked: recorded with the changes, in their transaction (not for a dry run). */
  operator?: Operator;
  /** A dry run's `digest`: apply only if this run's report and changes are exactly those, else 409. */
  digest?: string;
}

/** Thrown out of a dry run's transaction so that it rolls back, carrying its result. */
class DryRun extends Error {
  constructor(readonly result: Compared) {
    super('dry run: rolled back');
  }
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
  private readonly moves: ResolutionMoves;

  constructor(
    private readonly store: LedgerStore,
    private readonly metrics: LedgerMetrics,
    @Optional() @Inject(RESOLUTION_LISTENER) listener?: ResolutionListener,
  ) {
    this.moves = new ResolutionMoves(store, listener);
  }

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
    const { requestId, period, dryRun = false, digest } = options;
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
        const compared = await compareWithLedger(tx, list.rows, requestId ?? null, period, dryRun);
        compared.report.digest = await reportDigest(tx, compared.report, requestId ?? null, list);
        // Thrown inside the transaction: it rolls back, so nothing but what was shown is ever applied.
        if (!dryRun && digest !== undefined && digest !== compared.report.digest)
          throw new ProblemException(
            'reconciliation_changed',
            'The ledger changed since the dry run: nothing was applied. Look at the new report and confirm again.',
          );
        if (dryRun) throw new DryRun(compared);
        if (options.operator)
          await recordAction(tx, options.operator, 'reconciliation', summaryOf(compared.report), requestId);
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
      await this.moves.tell(span);
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
}

/** What a reconciliation's record keeps: counts and the period, no trackId. */
function summaryOf(report: ReconciliationReport): Record<string, unknown> {
  return {
    rows: report.rows,
    period: report.period,
    chargedAndRecorded: report.chargedAndRecorded.count,
    chargedNotInLedger: report.chargedNotInLedger.count,
    resolved: report.resolved.count,
    resolvedNotCharged: report.resolvedNotCharged.count,
    corrected: report.correctedToCharged.count + report.correctedToNotCharged.count,
  };
}
