import type { BudgetCalendarName } from '../config/budget-config.js';
import { civilDate, civilDateFormat, isoDate, pad2, type CivilDate } from '../vocabulary/civil-date.js';

export const BUDGET_WINDOWS = ['daily', 'monthly'] as const;
export type BudgetWindowName = (typeof BUDGET_WINDOWS)[number];

/** One calendar window: its id (part of Redis key names) and where it starts and ends (epoch ms). */
export interface BudgetWindow {
  window: BudgetWindowName;
  /** `d2026-11-24`, `m2026-11`, or `mfa1405-09` on the Persian calendar: local dates, never instants. */
  id: string;
  startsAt: number;
  resetsAt: number;
}

export interface BudgetWindows {
  daily: BudgetWindow;
  monthly: BudgetWindow;
}

const DAY_MS = 86_400_000;
/** No zone's offset is beyond ±14 h: a local midnight lies within this of the same wall time in UTC. */
const OFFSET_BOUND_MS = 15 * 3_600_000;

/**
 * When a budget's day and month begin (docs/api.md §6, `BUDGET_TIMEZONE`, `BUDGET_CALENDAR`),
 * as pure functions of an instant: the caller passes the clock's reading, so the unit specs
 * drive it with a fake clock.
 *
 * Built on `Intl.DateTimeFormat` (ICU, full data in Node): it knows every IANA zone with its
 * daylight-saving history and the Persian (Solar Hijri) calendar, so no date library is needed
 * (docs/decisions/0011-budget-windows-on-intl.md). A day begins at the first instant whose local
 * date is that day: 00:00 normally, 01:00 where a daylight-saving switch skips midnight
 * (Asia/Tehran before 2022, America/Santiago). A month begins on its first day: day 1 of the
 * Gregorian month, or 1 Farvardin, 1 Ordibehesht, … on the Persian calendar.
 */
export class BudgetCalendar {
  private readonly local: Intl.DateTimeFormat;
  private readonly persian: Intl.DateTimeFormat;
  private cached: BudgetWindows | null = null;

  constructor(
    readonly timeZone: string,
    readonly calendar: BudgetCalendarName,
  ) {
    this.local = civilDateFormat(timeZone);
    // Civil dates are converted at noon UTC: only the calendar, not a zone, is involved.
    this.persian = civilDateFormat('UTC', 'persian');
  }

  /** The windows the instant `now` falls in; cached until the earlier one resets. */
  windowsAt(now: number): BudgetWindows {
    const cached = this.cached;
    if (cached && now >= cached.daily.startsAt && now < cached.daily.resetsAt && now < cached.monthly.resetsAt) {
      return cached;
    }
    const today = this.localDate(now);
    const tomorrow = addDays(today, 1);
    const daily: BudgetWindow = {
      window: 'daily',
      id: `d${isoDate(today)}`,
      startsAt: this.startOfDay(today),
      resetsAt: this.startOfDay(tomorrow),
    };
    const month = this.calendar === 'persian' ? this.persianMonth(today) : gregorianMonth(today);
    const monthly: BudgetWindow = {
      window: 'monthly',
      id: month.id,
      startsAt: this.startOfDay(month.first),
      resetsAt: this.startOfDay(month.next),
    };
    this.cached = { daily, monthly };
    return this.cached;
  }

  /** The local (Gregorian) date of an instant in the budget's zone. */
  private localDate(at: number): CivilDate {
    return civilDate(this.local, at);
  }

  /**
   * The first instant whose local date is `date` (or later). Local dates only move forward with
   * time, so a binary search over the ±15 h around the same wall time in UTC finds it to the
   * millisecond; zone offsets and switches are whatever ICU says they were on that date.
   */
  private startOfDay(date: CivilDate): number {
    const wall = Date.UTC(date.year, date.month - 1, date.day);
    const target = ordinal(date);
    let low = wall - OFFSET_BOUND_MS;
    let high = wall + OFFSET_BOUND_MS;
    // Invariant: ordinal(localDate(low)) < target <= ordinal(localDate(high)); 27 halvings at most.
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (ordinal(this.localDate(middle)) < target) low = middle;
      else high = middle;
    }
    return high;
  }

  /** The Solar Hijri month `date` falls in: its first day and the next month's, as Gregorian dates. */
  private persianMonth(date: CivilDate): { id: string; first: CivilDate; next: CivilDate } {
    const persian = civilDate(this.persian, Date.UTC(date.year, date.month - 1, date.day, 12));
    const first = addDays(date, 1 - persian.day);
    // Persian months have 29 to 31 days: from the 30th day on, the next 1st is at most 2 days on.
    let next = addDays(first, 29);
    for (
      let step = 0;
      civilDate(this.persian, Date.UTC(next.year, next.month - 1, next.day, 12)).day !== 1;
      step += 1
    ) {
      if (step === 2) throw new Error('no Persian month is longer than 31 days');
      next = addDays(next, 1);
    }
    return { id: `mfa${persian.year}-${pad2(persian.month)}`, first, next };
  }
}

function gregorianMonth(date: CivilDate): { id: string; first: CivilDate; next: CivilDate } {
  const first = { year: date.year, month: date.month, day: 1 };
  const next = date.month === 12 ? { year: date.year + 1, month: 1, day: 1 } : { ...first, month: date.month + 1 };
  return { id: `m${date.year}-${pad2(date.month)}`, first, next };
}

function addDays(date: CivilDate, days: number): CivilDate {
  const moved = new Date(Date.UTC(date.year, date.month - 1, date.day) + days * DAY_MS);
  return { year: moved.getUTCFullYear(), month: moved.getUTCMonth() + 1, day: moved.getUTCDate() };
}

/** Days since the epoch: dates compare as numbers. */
function ordinal(date: CivilDate): number {
  return Date.UTC(date.year, date.month - 1, date.day) / DAY_MS;
}
