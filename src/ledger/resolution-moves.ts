import type { BudgetMove } from '../budget/budget.store.js';
import type { Charged } from './ledger-entry.js';
import type { LedgerStore } from './ledger.store.js';
import type { ResolutionListener } from './resolution-listener.js';

/** Resolutions read and told to the listener (budgets) per batch, after the commit. */
const RESOLUTION_BATCH = 500;

/**
 * The outbox of budget moves: every `reconciled` entry in `span` with a recorded reservation
 * and no row in ledger_budget_moves is told to the listener (budgets, Redis), then recorded
 * there (its units: what the inquiry counts after it, units or 0). So a resend after a Redis
 * failure applies what was left (test/reconciliation.integration.spec.ts). A move sets what
 * the inquiry counts rather than adding to it, and a store that lost its data has no held
 * marker and moves nothing (budget/budget.store.ts): a move sent again, or after a crash
 * between the Redis move and its row, changes nothing more.
 * Keyset batches (created_at, track_id, revision): memory holds one batch.
 */
export class ResolutionMoves {
  constructor(
    private readonly store: LedgerStore,
    private readonly listener?: ResolutionListener,
  ) {}

  async tell(span: { from: Date; to: Date }): Promise<void> {
    if (!this.listener) return;
    let after: { createdAt: Date; trackId: string; revision: number } | null = null;
    for (;;) {
      const batch: MoveRow[] = await this.store.db.query<MoveRow>(
        `SELECT e.track_id::text AS track_id, e.revision, e.created_at, e.charged,
           e.reserved_units, e.reserved_budgets, e.reserved_daily, e.reserved_monthly
         FROM ledger_entries e
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
            u: move.charged ? move.units : 0,
            b: move.budgets,
            d: move.daily,
            m: move.monthly,
          })),
        ),
      ],
    );
  }
}

interface MoveRow {
  track_id: string;
  revision: number;
  created_at: Date;
  charged: Charged;
  reserved_units: number;
  reserved_budgets: string[];
  reserved_daily: string;
  reserved_monthly: string;
}

/**
 * A resolution's move: its verdict and exactly the units recorded with the inquiry; the budget
 * store sets what the inquiry counts to it (units or 0), whatever it counted before.
 */
function moveOf(row: MoveRow): BudgetMove {
  return {
    trackId: row.track_id,
    revision: row.revision,
    charged: row.charged !== 'no',
    units: row.reserved_units,
    budgets: row.reserved_budgets,
    daily: row.reserved_daily,
    monthly: row.reserved_monthly,
  };
}
