import type { LedgerStore } from './ledger.store.js';

/** What the provider's tracking service was last asked about an inquiry (docs/api.md §8), as the list shows it. */
export interface TrackingState {
  /** How many questions were sent about it. */
  questions: number;
  lastAskedAt: string;
  /** The last question's result, as vgw_tracking_questions_total labels it (`yes`, `no`, `not_found`, `error` …). */
  lastAnswer: string;
}

/**
 * The questions' state of these inquiries (ledger_tracking, migration 10; by its key, one probe
 * each): only those asked about at least once. A page of the list holds at most 500 rows.
 */
export async function trackingStates(
  store: LedgerStore,
  trackIds: readonly string[],
): Promise<Map<string, TrackingState>> {
  if (trackIds.length === 0) return new Map();
  await store.ready();
  const rows = await store.db.query<{ track_id: string; questions: number; last_asked_at: Date; last_answer: string }>(
    `SELECT track_id::text AS track_id, questions, last_asked_at, last_answer FROM ledger_tracking
     WHERE track_id = ANY($1::uuid[]) AND last_asked_at IS NOT NULL AND last_answer IS NOT NULL`,
    [trackIds],
  );
  return new Map(
    rows.map((row) => [
      row.track_id,
      { questions: row.questions, lastAskedAt: new Date(row.last_asked_at).toISOString(), lastAnswer: row.last_answer },
    ]),
  );
}
