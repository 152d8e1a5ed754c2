import { ProblemException } from '../problem/problem.js';

/** `2026-11-24`, or a full timestamp with its zone (`Z` or `±hh:mm`); seconds and fraction optional. */
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):(\d{2})))?$/;

/** The instants every engine stores alike: years 0001 to 9999 in UTC (issue 33: year 0 was 503 on PGlite only). */
const EARLIEST = new Date(0).setUTCFullYear(1, 0, 1);
const LATEST = new Date(0).setUTCFullYear(9999, 11, 31) + 86_400_000 - 1;

/** Days of `month` (1-12) in `year`: day 0 of the next month (setUTCFullYear: years under 100 are not 19xx). */
function daysIn(year: number, month: number): number {
  return new Date(new Date(0).setUTCFullYear(year, month, 0)).getUTCDate();
}

function invalid(name: string, why: string): ProblemException {
  return new ProblemException('validation_failed', `${name} ${why}.`, { errors: [{ field: name, message: why }] });
}

/**
 * One date rule for every administration route (docs/api.md §6): ISO 8601, a real calendar
 * date and time (2026-02-30 and 24:00 are refused, not rolled over as `new Date` does), and an
 * instant within years 0001–9999 in UTC, so that PostgreSQL and PGlite both store and compare
 * it: a bad date is 400 `validation_failed` naming the field, before any query
 * (src/ledger/ledger-dates.spec.ts, test/ledger-dates.e2e.spec.ts).
 */
export function ledgerDate(name: string, raw: string | undefined): Date {
  const parts = raw === undefined ? null : ISO_DATE.exec(raw);
  if (!parts) throw invalid(name, 'must be an ISO 8601 date (2026-11-24) or timestamp with its zone');
  const [year, month, day, hour = 0, minute = 0, second = 0] = parts.slice(1, 7).map((p) => Number(p ?? 0));
  const fraction = parts[7] ?? '';
  const [, , , , , , , , , sign, offsetHours, offsetMinutes] = parts;
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month))
    throw invalid(name, 'must be a calendar date (month 01-12, a day the month has)');
  if (hour > 23 || minute > 59 || second > 59) throw invalid(name, 'must have a time from 00:00:00 to 23:59:59');
  const offset = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes));
  if (sign !== undefined && (Number(offsetHours) > 23 || Number(offsetMinutes) > 59))
    throw invalid(name, 'must have a zone offset from -23:59 to +23:59');
  const millis = Number(fraction.padEnd(3, '0').slice(0, 3));
  const local = new Date(0).setUTCFullYear(year, month - 1, day) + ((hour * 60 + minute) * 60 + second) * 1000 + millis;
  const instant = local - offset * 60_000;
  if (year < 1 || instant < EARLIEST || instant > LATEST)
    throw invalid(name, 'must fall within the years 0001 to 9999 (UTC)');
  return new Date(instant);
}

/** `from` inclusive, `to` exclusive (docs/api.md §6); `to` must come after `from`. */
export function ledgerRange(from: string | undefined, to: string | undefined): { from: Date; to: Date } {
  const span = { from: ledgerDate('from', from), to: ledgerDate('to', to) };
  if (span.to <= span.from) throw invalid('to', 'must be after from');
  return span;
}
