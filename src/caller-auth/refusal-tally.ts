import { Counter, type Registry } from 'prom-client';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';
import { civilDate, civilDateFormat, isoDate } from '../vocabulary/civil-date.js';

/** Why an inquiry was refused with 429 before a trackId: its client's budget, or a quota. */
export type RefusalReason = 'budget' | 'quota';

/** Refusals of one day (in BUDGET_TIMEZONE, Gregorian `2026-11-24`), client, operation and reason. */
export interface RefusalCount {
  day: string;
  clientId: string;
  operation: InquiryOperation;
  reason: RefusalReason;
  count: number;
}

/** Distinct keys held at most: days × clients × operations × reasons between two flushes. */
export const REFUSAL_TALLY_MAX_KEYS = 10_000;
/**
 * The zone whose days refusals are tallied by: BUDGET_TIMEZONE, the budgets' slice, handed over
 * by the app's wiring (app.module.ts) so that caller-auth reads no other feature's config.
 */
export const REFUSAL_TIME_ZONE = Symbol('REFUSAL_TIME_ZONE');

/** From this share of the cap on, the flusher is asked to write early. */
const NEAR_FULL = 0.8;

/**
 * This replica's refusals (429 `budget_exhausted` and the quotas' 429 `rate_limited`) since its
 * last flush, by day, client, operation and reason (issue 35): a map increment on the request
 * path, nothing more. The ledger's RefusalFlusher takes the counts every few seconds and adds
 * them to `ledger_refusals`; a failed write gives them back. Memory is bounded: at most
 * `maxKeys` keys are held; a refusal of a new key beyond that is not tallied but counted in
 * `vgw_refusal_tally_dropped_total` (src/caller-auth/refusal-tally.spec.ts, "holds at most").
 * Without a flusher (no ledger) the tally fills to its cap and then only counts what it drops.
 */
export class RefusalTally {
  private counts = new Map<string, RefusalCount>();
  private readonly dropped: Counter;
  /** The budgets' local (Gregorian) day: the one their daily window is named by. */
  private readonly local: Intl.DateTimeFormat;
  private nearFull: (() => void) | undefined;

  constructor(
    timeZone: string,
    registry: Registry,
    private readonly maxKeys = REFUSAL_TALLY_MAX_KEYS,
  ) {
    this.local = civilDateFormat(timeZone);
    this.dropped = new Counter({
      name: 'vgw_refusal_tally_dropped_total',
      help: 'Refusals (429 budget or quota) not tallied for GET /admin/trends: the tally was full (flushes failing or too slow)',
      registers: [registry],
    });
  }

  /** Keys held now. */
  get size(): number {
    return this.counts.size;
  }

  /** Called (once per crossing) when the tally nears its cap: the flusher writes early. */
  onNearFull(listener: () => void): void {
    this.nearFull = listener;
  }

  /** One refusal at `at` (epoch ms). */
  count(clientId: string, operation: InquiryOperation, reason: RefusalReason, at = Date.now()): void {
    this.add({ day: this.day(at), clientId, operation, reason, count: 1 });
  }

  /** Everything held, emptying the tally (the flusher writes it, or gives it back). */
  take(): RefusalCount[] {
    const taken = [...this.counts.values()];
    this.counts = new Map();
    return taken;
  }

  /**
   * Counts a failed write could not store: added back, within the same cap, never calling the
   * near-full listener (a flush failing with a near-full tally would call the next at once).
   */
  giveBack(counts: readonly RefusalCount[]): void {
    for (const count of counts) this.add({ ...count }, false);
  }

  private add(count: RefusalCount, mayCallNearFull = true): void {
    const key = JSON.stringify([count.day, count.clientId, count.operation, count.reason]);
    const held = this.counts.get(key);
    if (held) {
      held.count += count.count;
      return;
    }
    if (this.counts.size >= this.maxKeys) {
      this.dropped.inc(count.count);
      return;
    }
    this.counts.set(key, count);
    if (mayCallNearFull && this.counts.size === Math.ceil(this.maxKeys * NEAR_FULL)) this.nearFull?.();
  }

  private day(at: number): string {
    return isoDate(civilDate(this.local, at));
  }
}
