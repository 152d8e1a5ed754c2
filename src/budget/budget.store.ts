import type { BudgetWindowName, BudgetWindows } from './budget-windows.js';

/** One budget a reservation is checked against: a client's own, or `*`'s; -1 = that window is not budgeted. */
export interface BudgetLimits {
  name: string;
  daily: number;
  monthly: number;
}

export interface ReserveRequest {
  trackId: string;
  units: number;
  now: number;
  /** When an unsettled reservation is concluded as spent (the inquiry's deadline and margin). */
  concludeAt: number;
  windows: BudgetWindows;
  budgets: BudgetLimits[];
}

export type ReserveResult =
  | { admitted: true }
  | {
      admitted: false;
      window: BudgetWindowName;
      /** The budget that refused: a client id or `*`. */
      budget: string;
      remaining: number;
      /** True for the window's first refusal, deployment-wide (one log line per exhausted budget). */
      first: boolean;
    };

/**
 * What a reservation counted, recorded on the inquiry's record and carried into its ledger
 * entries: a resolution gives back exactly this, to exactly these windows, whatever the
 * prices and budgets are by then (docs/api.md §6).
 */
export interface ReservationRecord {
  units: number;
  /** The budgets it counted in: the client's own and/or `*`. */
  budgets: string[];
  /** The window ids (BudgetCalendar.windowsAt): `d2026-11-24`, `m2026-11`. */
  daily: string;
  monthly: string;
}

/** What a request reserves, as its record keeps it. */
export function reservationRecord(request: ReserveRequest): ReservationRecord {
  return {
    units: request.units,
    budgets: request.budgets.map((b) => b.name),
    daily: request.windows.daily.id,
    monthly: request.windows.monthly.id,
  };
}

/** One budget move of a reconciliation: a resolution (revision 1) or a correction (2, 3, …). */
export interface BudgetMove {
  trackId: string;
  revision: number;
  /** What the inquiry is now resolved as: its windows count `units` for it, or 0. */
  charged: boolean;
  /** The units its reservation counted (ReservationRecord.units). */
  units: number;
  budgets: string[];
  daily: string;
  monthly: string;
}

const DAY_MS = 86_400_000;

/** Spent and reserved units of one budget in one window. */
export interface BudgetUsage {
  spent: number;
  reserved: number;
}

/** How long a reservation concluded as spent is kept, so that a late settlement still finds it. */
export const CONCLUDED_KEEP_MS = 24 * 3_600_000;
/** Window counters outlive their window by this much (reads of the window just ended, late settlements). */
export const WINDOW_GRACE_MS = 2 * 24 * 3_600_000;
/** A held marker lives as long as its month window, at most this (the longest month, 31 days, and the grace). */
export const HELD_MAX_MS = 35 * DAY_MS;

/** What a move did: applied, already applied (its revision or a later one), or nothing held to move. */
export type ResolveOutcome = 'moved' | 'applied_before' | 'not_held';

/**
 * What settling does to a reservation: commit (spent), release (given back), or unknown
 * (spent, possibly charged: a reconciliation may move it later, so it is marked as held).
 */
export type BudgetAction = 'commit' | 'release' | 'unknown';

/**
 * The budget counters shared by every replica (docs/api.md §6, "Budgets"): Redis scripts
 * (redis-budget.store.ts), or this process's memory without Redis. Each operation is atomic.
 *
 * A reservation counts as `reserved` in its day and month until it is settled: committed (moved
 * to `spent`) or released (removed). One that is still unsettled at `concludeAt` belongs to an
 * inquiry whose process died: it is concluded as spent, like the `unknown` its record reads, by
 * whichever operation runs next; a settlement arriving later still applies (a release then
 * gives the units back) until a reconciliation resolves it.
 *
 * An inquiry a reconciliation may still move (settled `unknown`, or concluded as spent) is
 * marked as held: what its windows count for it (its units, or 0 once a late release gave them
 * back) and the last revision applied, kept as long as its month window. A move sets that count
 * to its verdict, so moves and late settlements agree in any order, and a move without a
 * marker (the windows forgot the units: Redis restarted empty, the process restarted, the month
 * ended) changes nothing (test/reconciliation.integration.spec.ts, 'gives units back once when a
 * late failed settlement released them' and 'gives nothing back to a window that forgot the units').
 */
export abstract class BudgetStore {
  abstract reserve(request: ReserveRequest): Promise<ReserveResult>;
  abstract settle(trackId: string, action: BudgetAction, now: number): Promise<void>;
  /**
   * A reconciliation's budget move (docs/api.md §6): exactly the recorded reservation, in its
   * recorded windows. The inquiry's held count becomes `charged ? units : 0` (a reservation
   * still held is settled so); a revision not above the last applied, or no held marker, moves
   * nothing. A window that has ended is left alone.
   */
  abstract resolve(move: BudgetMove, now: number): Promise<ResolveOutcome>;
  /** Usage by `<name>|<window>`; concludes overdue reservations first. */
  abstract read(windows: BudgetWindows, names: string[], now: number): Promise<Map<string, BudgetUsage>>;
}

interface MemoryReservation {
  units: number;
  names: string[];
  day: string;
  month: string;
  concludeAt: number;
  concluded: boolean;
}

/** Without Redis (one replica only, docs/decisions/0005-in-process-store.md): the same rules in memory. */
export class MemoryBudgetStore extends BudgetStore {
  private readonly counters = new Map<string, { expiresAt: number; fields: Map<string, number> }>();
  private readonly reservations = new Map<string, MemoryReservation>();
  /** The held markers: trackId → what its windows count, the last revision applied, until when. */
  private readonly held = new Map<string, { counted: number; revision: number; expiresAt: number }>();

  reserve(request: ReserveRequest): Promise<ReserveResult> {
    const { now, units, windows } = request;
    this.sweep(now);
    // Once per trackId, as the Redis script (a write it re-sends after a reconnect reserves nothing more).
    if (this.reservations.has(request.trackId)) return Promise.resolve({ admitted: true });
    const day = this.window(windows.daily.id, windows.daily.resetsAt + WINDOW_GRACE_MS, now);
    const month = this.window(windows.monthly.id, windows.monthly.resetsAt + WINDOW_GRACE_MS, now);
    const checks = [
      ...request.budgets.map((b) => ({ name: b.name, counters: month, limit: b.monthly, window: 'monthly' as const })),
      ...request.budgets.map((b) => ({ name: b.name, counters: day, limit: b.daily, window: 'daily' as const })),
    ];
    for (const { name, counters, limit, window } of checks) {
      if (limit < 0) continue;
      const used = (counters.get(`s:${name}`) ?? 0) + (counters.get(`r:${name}`) ?? 0);
      if (used + units > limit) {
        const first = !counters.has(`x:${name}`);
        counters.set(`x:${name}`, 1);
        return Promise.resolve({ admitted: false, window, budget: name, remaining: limit - used, first });
      }
    }
    for (const { name } of request.budgets) {
      add(day, `r:${name}`, units);
      add(month, `r:${name}`, units);
    }
    this.reservations.set(request.trackId, {
      units,
      names: request.budgets.map((b) => b.name),
      day: windows.daily.id,
      month: windows.monthly.id,
      concludeAt: request.concludeAt,
      concluded: false,
    });
    return Promise.resolve({ admitted: true });
  }

  settle(trackId: string, action: BudgetAction, now: number): Promise<void> {
    this.sweep(now);
    this.finish(trackId, action);
    return Promise.resolve();
  }

  resolve(move: BudgetMove, now: number): Promise<ResolveOutcome> {
    this.sweep(now);
    const reservation = this.reservations.get(move.trackId);
    if (reservation && !reservation.concluded) {
      this.finish(move.trackId, 'release');
      this.mark(move.trackId, reservation.month, 0);
    } else if (reservation) this.reservations.delete(move.trackId);
    const held = this.held.get(move.trackId);
    if (!held) return Promise.resolve('not_held');
    if (move.revision <= held.revision) return Promise.resolve('applied_before');
    const target = move.charged ? move.units : 0;
    for (const id of [move.daily, move.monthly]) {
      const counters = this.counters.get(id)?.fields;
      if (counters) for (const name of move.budgets) add(counters, `s:${name}`, target - held.counted);
    }
    this.held.set(move.trackId, { ...held, counted: target, revision: move.revision });
    return Promise.resolve('moved');
  }

  read(windows: BudgetWindows, names: string[], now: number): Promise<Map<string, BudgetUsage>> {
    this.sweep(now);
    const usage = new Map<string, BudgetUsage>();
    for (const window of [windows.daily, windows.monthly]) {
      const counters = this.counters.get(window.id)?.fields;
      for (const name of names) {
        usage.set(`${name}|${window.window}`, {
          spent: counters?.get(`s:${name}`) ?? 0,
          reserved: counters?.get(`r:${name}`) ?? 0,
        });
      }
    }
    return Promise.resolve(usage);
  }

  /** Applies a settlement to a reservation; false when there is none (settled or never made). */
  private finish(trackId: string, action: BudgetAction): boolean {
    const reservation = this.reservations.get(trackId);
    if (!reservation) return false;
    this.reservations.delete(trackId);
    const held = this.held.get(trackId);
    if (reservation.concluded && action === 'release' && held) this.held.set(trackId, { ...held, counted: 0 });
    if (!reservation.concluded && action === 'unknown') this.mark(trackId, reservation.month, reservation.units);
    for (const id of [reservation.day, reservation.month]) {
      const counters = this.counters.get(id)?.fields;
      if (!counters) continue;
      for (const name of reservation.names) {
        if (reservation.concluded) {
          if (action === 'release') add(counters, `s:${name}`, -reservation.units);
        } else {
          add(counters, `r:${name}`, -reservation.units);
          if (action !== 'release') add(counters, `s:${name}`, reservation.units);
        }
      }
    }
    return true;
  }

  /** Concludes overdue reservations as spent, forgets old concluded ones and ended windows. */
  private sweep(now: number): void {
    for (const [trackId, reservation] of this.reservations) {
      if (reservation.concludeAt > now) continue;
      if (reservation.concluded) {
        this.reservations.delete(trackId);
        continue;
      }
      this.finish(trackId, 'unknown');
      this.reservations.set(trackId, { ...reservation, concluded: true, concludeAt: now + CONCLUDED_KEEP_MS });
    }
    for (const [id, window] of this.counters) if (window.expiresAt <= now) this.counters.delete(id);
    for (const [trackId, held] of this.held) if (held.expiresAt <= now) this.held.delete(trackId);
  }

  /** As the Redis script's `mark`: only while the month window is counted, and as long as it. */
  private mark(trackId: string, month: string, counted: number): void {
    const window = this.counters.get(month);
    if (!window) return;
    this.held.set(trackId, { counted, revision: 0, expiresAt: window.expiresAt });
  }

  private window(id: string, expiresAt: number, now: number): Map<string, number> {
    let window = this.counters.get(id);
    if (!window || window.expiresAt <= now) {
      window = { expiresAt, fields: new Map() };
      this.counters.set(id, window);
    }
    return window.fields;
  }
}

function add(counters: Map<string, number>, field: string, units: number): void {
  counters.set(field, (counters.get(field) ?? 0) + units);
}
