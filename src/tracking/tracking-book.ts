import { FACT_RANK, LATEST_FIRST } from '../ledger/ledger-rows.js';
import type { LedgerStore } from '../ledger/ledger.store.js';
import { RECONCILE_LOCK } from '../ledger/reconciliation.js';
import { appendResolutions, verdictOf } from '../ledger/resolution-append.js';
import type { TrackingResult } from './tracking-answer.js';

/** An unknown inquiry the tracker may ask about. */
export interface TrackingCandidate {
  trackId: string;
  createdAt: Date;
}

/** How long after its creation an unknown is asked about; after that, reconciliation's alone (docs/api.md §8). */
export const ASK_FOR_HOURS = 24;

/**
 * An unknown, possibly charged entry still standing (no stronger fact of its inquiry: a settled
 * one over an overdue one, or a resolution), as `e`. The partial index of migration 10 finds them.
 */
const STANDING_UNKNOWN = `e.status = 'unknown' AND e.charged = 'possibly'
  AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.track_id = e.track_id AND l.created_at = e.created_at
    AND ${FACT_RANK('l')} > ${FACT_RANK('e')})`;

/**
 * How far back the gauge looks: unknowns between a day and this old. Beyond it an unknown is
 * reconciliation's (tracking stops after ASK_FOR_HOURS; the console's "still unknown" looks back
 * as far), and the window keeps the count's cost that of a month's unknowns, not the ledger's
 * (npm run bench:ledger-unknowns).
 */
export const UNKNOWNS_GAUGE_DAYS = 30;

/** The gauge's count (vgw_ledger_unknowns_older_than_a_day), run once a minute by every replica. */
export const UNKNOWNS_GAUGE_SQL = `SELECT count(DISTINCT e.track_id)::int AS n FROM ledger_entries e
  WHERE e.created_at < now() - interval '1 day' AND e.created_at >= now() - interval '${UNKNOWNS_GAUGE_DAYS} days'
    AND ${STANDING_UNKNOWN}`;

/** A replica's lease on asking about one inquiry: `until` (UTC, to the microsecond) names it. */
export interface Lease {
  trackId: string;
  until: string;
  /** How often the inquiry was asked about before. */
  questions: number;
}

/** The row's lease is still the one that ended at $2 (a timestamp without zone, UTC). */
const HELD_BY_2 = `leased_until = ($2::timestamp AT TIME ZONE 'UTC')`;

/**
 * The questions' state in PostgreSQL (table ledger_tracking, migration 10), shared by every
 * replica on one clock (the database's now()): which unknowns are due, the lease that lets one
 * replica ask about an inquiry at a time, the backoff, and the resolution appended once.
 * Every write over a row is conditional (the lease's ON CONFLICT ... WHERE).
 */
export class TrackingBook {
  constructor(private readonly store: LedgerStore) {}

  /** Unknowns at least `afterSeconds` old, at most ASK_FOR_HOURS, not resolved, due and not leased; oldest first. */
  async due(afterSeconds: number, limit: number): Promise<TrackingCandidate[]> {
    await this.store.ready();
    const rows = await this.store.db.query<{ track_id: string; created_at: Date }>(
      `SELECT DISTINCT e.track_id::text AS track_id, e.created_at FROM ledger_entries e
       WHERE e.created_at >= now() - make_interval(hours => ${ASK_FOR_HOURS})
         AND e.created_at <= now() - make_interval(secs => $1) AND ${STANDING_UNKNOWN}
         AND NOT EXISTS (SELECT 1 FROM ledger_tracking t WHERE t.track_id = e.track_id
           AND (t.done OR t.next_at > now() OR t.leased_until > now()))
       ORDER BY e.created_at LIMIT $2`,
      [afterSeconds, limit],
    );
    return rows.map((row) => ({ trackId: row.track_id, createdAt: new Date(row.created_at) }));
  }

  /**
   * The lease: this replica asks about the inquiry until `seconds` from now, unless another holds
   * it, its backoff has not ended, or it is resolved. Taken: the lease (its end, exact, names it
   * in every later write: a replica whose lease ran out mid-question changes nothing of the
   * next holder's, test/tracking-race.integration.spec.ts) and how often it was asked before.
   */
  async lease(candidate: TrackingCandidate, seconds: number): Promise<Lease | undefined> {
    const rows = await this.store.db.query<{ questions: number; until: string }>(
      `INSERT INTO ledger_tracking AS t (track_id, created_at, leased_until)
       VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (track_id) DO UPDATE SET leased_until = EXCLUDED.leased_until
       WHERE NOT t.done AND t.next_at <= now() AND t.leased_until <= now()
       RETURNING t.questions, to_char(t.leased_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS until`,
      [candidate.trackId, candidate.createdAt, seconds],
    );
    return rows[0] && { trackId: candidate.trackId, until: rows[0].until, questions: rows[0].questions };
  }

  /** Gives the lease back unasked (no question could be sent now). */
  async release(lease: Lease): Promise<void> {
    await this.store.db.query(
      `UPDATE ledger_tracking SET leased_until = '-infinity' WHERE track_id = $1 AND ${HELD_BY_2}`,
      [lease.trackId, lease.until],
    );
  }

  /** Nothing learned: asked again once `backoffSeconds` have passed. */
  async unanswered(lease: Lease, result: TrackingResult, backoffSeconds: number): Promise<void> {
    await this.store.db.query(
      `UPDATE ledger_tracking SET questions = questions + 1, last_asked_at = now(), last_answer = $3,
         next_at = now() + make_interval(secs => $4), leased_until = '-infinity'
       WHERE track_id = $1 AND ${HELD_BY_2}`,
      [lease.trackId, lease.until, result, backoffSeconds],
    );
  }

  /**
   * Learned: the resolution appended as a reconciliation's (plus resolvedBy 'tracking'), only
   * while the latest fact is still the unknown, and the question recorded, in one transaction.
   * Under the reconciliations' lock, shared: a list being compared finishes first (and this then
   * finds the inquiry resolved), or compares after this commits (and appends a correction when it
   * disagrees, docs/api.md §6). True when the resolution was appended here.
   */
  async learned(trackId: string, result: TrackingResult, charged: boolean): Promise<boolean> {
    return this.store.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock_shared($1)', [RECONCILE_LOCK.toString()]);
      const latest = `SELECT * FROM (SELECT * FROM ledger_entries e WHERE e.track_id = $1
        ORDER BY ${LATEST_FIRST} LIMIT 1) latest WHERE latest.status = 'unknown' AND latest.charged = 'possibly'`;
      const appended = await appendResolutions(tx, verdictOf(charged), latest, [trackId], null, 'tracking');
      await tx.query(
        `UPDATE ledger_tracking SET questions = questions + 1, last_asked_at = now(), last_answer = $2,
           done = true, leased_until = '-infinity'
         WHERE track_id = $1`,
        [trackId, result],
      );
      return appended === 1;
    });
  }

  /** Inquiries still unknown (possibly charged) more than a day after they were made. */
  async unknownsOlderThanADay(): Promise<number> {
    await this.store.ready();
    const [{ n }] = await this.store.db.query<{ n: number }>(UNKNOWNS_GAUGE_SQL);
    return n;
  }
}
