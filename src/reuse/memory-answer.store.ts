import type { RequestHandlingType } from '../upstream/inquiry-operation.js';
import {
  AnswerStore,
  leaseMs,
  type AnswerToStore,
  type Leader,
  type ReuseAllowance,
  type ReuseLookup,
  type StoredAnswer,
} from './answer-store.js';

/** Answers kept at most, oldest stored dropped first: the process's memory is bounded whatever the traffic. */
export const MAX_MEMORY_ANSWERS = 10_000;

interface Expiring<T> {
  value: T;
  expiresAt: number;
}

/**
 * The answer store of one process (no Redis: one replica only), with the same rules as the
 * Redis scripts, on this process's clock. Answers are copied in and out (structuredClone), so
 * nobody holding one can change what another reads.
 */
export class MemoryAnswerStore extends AnswerStore {
  private readonly answers = new Map<string, Expiring<StoredAnswer>>();
  private readonly inFlight = new Map<string, Expiring<string>>();

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  lookupOrJoin(
    questionKey: string,
    handling: RequestHandlingType,
    allowance: ReuseAllowance,
    leader: Leader,
  ): Promise<ReuseLookup> {
    const now = this.now();
    const stored = this.live(this.answers, questionKey, now);
    const ageMs = stored ? Math.max(now - stored.completedAtMs, 0) : 0;
    if (stored && allowance.maxAgeMs > 0 && ageMs <= allowance.maxAgeMs) {
      return Promise.resolve({ result: 'hit', answer: structuredClone(stored), ageMs });
    }
    const stale =
      stored && ageMs <= allowance.maxAgeMs + allowance.staleMs
        ? { stale: { answer: structuredClone(stored), ageMs } }
        : {};
    const flightKey = `${questionKey}:${handling}`;
    const flight = this.inFlight.get(flightKey);
    const running = flight && flight.expiresAt > now ? flight : undefined;
    if (allowance.join && running) {
      return Promise.resolve({
        result: 'join',
        leader: { trackId: running.value, leaseEndsMs: running.expiresAt },
        ...stale,
      });
    }
    const leading = allowance.lead && !running;
    if (leading) {
      this.inFlight.set(flightKey, { value: leader.trackId, expiresAt: now + leaseMs(leader.deadlineMs, now) });
    }
    return Promise.resolve({ result: 'miss', leading, storedTooOld: stored !== undefined, ...stale });
  }

  store(
    questionKey: string,
    handling: RequestHandlingType,
    answer: AnswerToStore,
    ttlSeconds: number,
  ): Promise<{ completedAtMs: number }> {
    const now = this.now();
    const completedAtMs = now;
    this.answers.delete(questionKey);
    this.answers.set(questionKey, {
      value: structuredClone({ ...answer, completedAtMs }),
      expiresAt: now + Math.max(1, Math.floor(ttlSeconds)) * 1000,
    });
    this.evict(now);
    const flightKey = `${questionKey}:${handling}`;
    if (this.inFlight.get(flightKey)?.value === answer.trackId) this.inFlight.delete(flightKey);
    return Promise.resolve({ completedAtMs });
  }

  release(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<boolean> {
    const flightKey = `${questionKey}:${handling}`;
    if (this.inFlight.get(flightKey)?.value !== trackId) return Promise.resolve(false);
    this.inFlight.delete(flightKey);
    return Promise.resolve(true);
  }

  renew(questionKey: string, handling: RequestHandlingType, trackId: string, deadlineMs: number): Promise<boolean> {
    const now = this.now();
    const flight = this.inFlight.get(`${questionKey}:${handling}`);
    if (flight?.value !== trackId || flight.expiresAt <= now) return Promise.resolve(false);
    flight.expiresAt = now + leaseMs(deadlineMs, now);
    return Promise.resolve(true);
  }

  leaseLeft(questionKey: string, handling: RequestHandlingType, trackId: string): Promise<number> {
    const flight = this.inFlight.get(`${questionKey}:${handling}`);
    return Promise.resolve(flight?.value === trackId ? Math.max(flight.expiresAt - this.now(), 0) : 0);
  }

  private live<T>(map: Map<string, Expiring<T>>, key: string, now: number): T | undefined {
    const entry = map.get(key);
    if (entry && entry.expiresAt <= now) map.delete(key);
    return entry && entry.expiresAt > now ? entry.value : undefined;
  }

  /** Expired registrations go, and the oldest answers beyond MAX_MEMORY_ANSWERS (Map order: insertion). */
  private evict(now: number): void {
    for (const [key, flight] of this.inFlight) if (flight.expiresAt <= now) this.inFlight.delete(key);
    for (const key of this.answers.keys()) {
      if (this.answers.size <= MAX_MEMORY_ANSWERS) break;
      this.answers.delete(key);
    }
  }
}
