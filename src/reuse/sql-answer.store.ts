import type { StoreCipher } from '../store/store-cipher.js';
import { recordsCall, type RecordsDatabase } from '../store/sql-records.js';
import type { RequestHandlingType } from '../upstream/inquiry-operation.js';
import {
  AnswerStore,
  leaseMs,
  type AgedAnswer,
  type AnswerToStore,
  type Leader,
  type ReuseAllowance,
  type ReuseLookup,
} from './answer-store.js';

/*
 * The answers kept for reuse and the registry of inquiries in flight of a single node (REDIS_URL
 * unset) in the embedded ledger's PGlite (records.migration.ts), with the rules of the Redis
 * scripts (redis-answer.store.ts) on this process's clock: an expired row is absent, and the
 * registration is claimed only where none lives (one leader), released and renewed only by its own.
 */

/** The stored answer and the live registration, in one read. */
const LOOK = `SELECT a.value, a.completed_at::float8 AS completed_at, f.track_id, f.expires_at::float8 AS lease_ends
  FROM (SELECT 1) one
  LEFT JOIN vgw_answers a ON a.question_key = $1 AND a.expires_at > $3
  LEFT JOIN vgw_in_flight f ON f.flight_key = $2 AND f.expires_at > $3`;

/** SET NX PX: the registration, where none lives; a row returned when it is ours. */
const LEAD = `INSERT INTO vgw_in_flight AS f (flight_key, track_id, expires_at) VALUES ($1, $2, $3)
  ON CONFLICT (flight_key) DO UPDATE SET track_id = EXCLUDED.track_id, expires_at = EXCLUDED.expires_at
  WHERE f.expires_at <= $4 RETURNING 1 AS ok`;

/** The answer (newest wins), and the end of the leader's registration if it is still its own. */
const STORE = `WITH kept AS (
    INSERT INTO vgw_answers (question_key, completed_at, value, expires_at) VALUES ($1, $3, $4, $5)
    ON CONFLICT (question_key) DO UPDATE SET completed_at = EXCLUDED.completed_at, value = EXCLUDED.value,
      expires_at = EXCLUDED.expires_at RETURNING 1)
  DELETE FROM vgw_in_flight WHERE flight_key = $2 AND track_id = $6 AND EXISTS (SELECT 1 FROM kept)`;

const RELEASE =
  'DELETE FROM vgw_in_flight WHERE flight_key = $1 AND track_id = $2 AND expires_at > $3 RETURNING 1 AS ok';

const RENEW = `UPDATE vgw_in_flight SET expires_at = $3 + $4::bigint
  WHERE flight_key = $1 AND track_id = $2 AND expires_at > $3 RETURNING 1 AS ok`;

const LEASE_LEFT = `SELECT (expires_at - $3)::float8 AS left_ms FROM vgw_in_flight
  WHERE flight_key = $1 AND track_id = $2 AND expires_at > $3`;

interface Look {
  value: string | null;
  completed_at: number | null;
  track_id: string | null;
  lease_ends: number | null;
}

export class SqlAnswerStore extends AnswerStore {
  constructor(
    private readonly db: RecordsDatabase,
    private readonly cipher: StoreCipher,
    private readonly now: () => number = Date.now,
  ) {
    super();
  }

  async lookupOrJoin(
    questionKey: string,
    handling: RequestHandlingType,
    allowance: ReuseAllowance,
    leader: Leader,
  ): Promise<ReuseLookup> {
    const flightKey = flightKeyOf(questionKey, handling);
    const now = Math.floor(this.now());
    const [look] = await recordsCall<Look>(this.db, 'reuse lookup', LOOK, [questionKey, flightKey, now]);
    const stored = look?.value != null ? this.open(questionKey, look.value, Number(look.completed_at), now) : undefined;
    const maxAgeMs = Math.max(0, allowance.maxAgeMs);
    if (stored && maxAgeMs > 0 && stored.ageMs <= maxAgeMs) return { result: 'hit', ...stored };
    const stale = stored && stored.ageMs <= maxAgeMs + Math.max(0, allowance.staleMs) ? { stale: stored } : {};
    const running = look?.track_id != null ? { trackId: look.track_id, leaseEndsMs: Number(look.lease_ends) } : null;
    if (allowance.join && running) return { result: 'join', leader: running, ...stale };
    let leading = false;
    if (allowance.lead && !running) {
      const lease = now + leaseMs(leader.deadlineMs, now);
      const params = [flightKey, leader.trackId, lease, now];
      leading = (await recordsCall(this.db, 'reuse lead', LEAD, params)).length === 1;
      // Another registered between the read and the claim: joined as if it had been read.
      if (!leading && allowance.join) {
        const [again] = await recordsCall<Look>(this.db, 'reuse lookup', LOOK, [questionKey, flightKey, now]);
        if (again?.track_id != null) {
          return {
            result: 'join',
            leader: { trackId: again.track_id, leaseEndsMs: Number(again.lease_ends) },
            ...stale,
          };
        }
      }
    }
    return { result: 'miss', leading, storedTooOld: stored !== undefined, ...stale };
  }

  /** The stored value opened with its age, or undefined when it cannot be (a miss, never an error). */
  private open(questionKey: string, value: string, completedAtMs: number, now: number): AgedAnswer | undefined {
    const opened = this.cipher.openOrUndefined(value, answerContext(questionKey));
    if (opened === undefined) return undefined;
    try {
      const answer = JSON.parse(opened) as AnswerToStore;
      return { answer: { ...answer, completedAtMs }, ageMs: Math.max(now - completedAtMs, 0) };
    } catch {
      return undefined;
    }
  }

  async store(
    questionKey: string,
    handling: RequestHandlingType,
    answer: AnswerToStore,
    ttlSeconds: number,
  ): Promise<{ completedAtMs: number }> {
    const completedAtMs = Math.floor(this.now());
    const kept: AnswerToStore = {
      trackId: answer.trackId,
      clientId: answer.clientId,
      data: answer.data,
      ...(answer.upstream ? { upstream: answer.upstream } : {}),
    };
    const sealed = this.cipher.seal(JSON.stringify(kept), answerContext(questionKey));
    const expiresAt = completedAtMs + Math.max(1, Math.floor(ttlSeconds)) * 1000;
    const params = [questionKey, flightKeyOf(questionKey, handling), completedAtMs, sealed, expiresAt, answer.trackId];
    await recordsCall(this.db, 'reuse store', STORE, params);
    return { completedAtMs };
  }

  async release(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<boolean> {
    const params = [flightKeyOf(questionKey, handling), trackId, Math.floor(this.now())];
    return (await recordsCall(this.db, 'reuse release', RELEASE, params)).length === 1;
  }

  async renew(
    questionKey: string,
    handling: RequestHandlingType,
    trackId: string,
    deadlineMs: number,
  ): Promise<boolean> {
    const now = Math.floor(this.now());
    const params = [flightKeyOf(questionKey, handling), trackId, now, leaseMs(deadlineMs, now)];
    return (await recordsCall(this.db, 'reuse renew', RENEW, params)).length === 1;
  }

  async leaseLeft(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<number> {
    const params = [flightKeyOf(questionKey, handling), trackId, Math.floor(this.now())];
    const [row] = await recordsCall<{ left_ms: number }>(this.db, 'reuse lease', LEASE_LEFT, params);
    return row ? Math.max(Number(row.left_ms), 0) : 0;
  }
}

const flightKeyOf = (questionKey: string, handling: RequestHandlingType) => `${questionKey}:${handling}`;
const answerContext = (questionKey: string) => `vgw:sql:answer:${questionKey}`;
