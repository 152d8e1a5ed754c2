import { civilDate, civilDateFormat, pad2 } from '../../../vocabulary/civil-date.js';
import { ANY_DIGIT, tidy, type FieldType } from '../field-type.js';

/** Years accepted (docs/api.md §10). */
export const PERSIAN_YEARS = { first: 1300, last: 1500 } as const;

const WRITTEN = /^([0-9]{4})([/-])([0-9]{1,2})\2([0-9]{1,2})$/;
const CANONICAL = /^([0-9]{4})\/([0-9]{2})\/([0-9]{2})$/;

/**
 * `persianDate`: a Solar Hijri date `YYYY/MM/DD` or `YYYY-MM-DD` (years 1300–1500), valid on
 * the calendar the budgets use (Intl's `persian`, docs/decisions/0011): Esfand 30 only in a
 * year that has it. Sent as `YYYY/MM/DD`.
 */
export const persianDateType: FieldType = {
  normalise: (input) => {
    const written = tidy(input);
    const match = WRITTEN.exec(written);
    return match ? `${match[1]}/${pad2(Number(match[3]))}/${pad2(Number(match[4]))}` : written;
  },
  accepts: (normalised) => {
    const match = CANONICAL.exec(normalised);
    if (!match) return false;
    const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
    if (year < PERSIAN_YEARS.first || year > PERSIAN_YEARS.last || month < 1 || month > 12 || day < 1) return false;
    return day <= daysInMonth(year, month);
  },
  expected: `must be a Solar Hijri date YYYY/MM/DD or YYYY-MM-DD, years ${PERSIAN_YEARS.first} to ${PERSIAN_YEARS.last}, valid in that calendar`,
  pattern: `^\\s*${ANY_DIGIT}{4}([/-])${ANY_DIGIT}{1,2}\\1${ANY_DIGIT}{1,2}\\s*$`,
  example: '1370/06/31',
};

/** Farvardin to Shahrivar have 31 days, Mehr to Bahman 30, Esfand 29 or 30. */
function daysInMonth(year: number, month: number): number {
  if (month <= 6) return 31;
  if (month <= 11) return 30;
  return esfandDays(year);
}

const DAY_MS = 86_400_000;
const persian = civilDateFormat('UTC', 'persian');
/** Esfand's length per year, read from Intl once per year (at most 201 entries). */
const esfandLengths = new Map<number, number>();

/**
 * Esfand of `year` ends the day before 1 Farvardin of `year + 1`, which falls on 20 or 21 March
 * (Gregorian year + 622); the day before it is Esfand 29 or 30 on Intl's calendar.
 */
function esfandDays(year: number): number {
  const known = esfandLengths.get(year);
  if (known !== undefined) return known;
  // Noon UTC on 19 March, then day by day: 1 Farvardin is at most three days on.
  let at = Date.UTC(year + 622, 2, 19, 12);
  for (let step = 0; step < 4; step++, at += DAY_MS) {
    const date = civilDate(persian, at);
    if (date.month === 1 && date.day === 1) break;
  }
  const length = civilDate(persian, at - DAY_MS).day === 30 ? 30 : 29;
  esfandLengths.set(year, length);
  return length;
}
