/** A civil date (month 1-12): a day on a calendar, never an instant. */
export interface CivilDate {
  year: number;
  month: number;
  day: number;
}

/**
 * Reads the civil date of an instant in a zone, on the Gregorian or the Persian calendar, with
 * Latin digits: `Intl.DateTimeFormat` (ICU, full data in Node; docs/decisions/0011). Used by the
 * budgets' windows and by the refusals' days, so both name the same day.
 */
export function civilDateFormat(timeZone: string, calendar: 'gregory' | 'persian' = 'gregory'): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat(`en-US-u-ca-${calendar}-nu-latn`, {
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    timeZone,
  });
}

/** The civil date `format` (from civilDateFormat) gives the instant `at` (epoch ms). */
export function civilDate(format: Intl.DateTimeFormat, at: number): CivilDate {
  const date: CivilDate = { year: 0, month: 0, day: 0 };
  for (const part of format.formatToParts(at)) {
    if (part.type === 'year' || part.type === 'month' || part.type === 'day') date[part.type] = Number(part.value);
  }
  return date;
}

export const pad2 = (value: number): string => String(value).padStart(2, '0');

/** `2026-11-24`: the year written with at least four digits, as PostgreSQL's `date` reads it. */
export const isoDate = (date: CivilDate): string =>
  `${String(date.year).padStart(4, '0')}-${pad2(date.month)}-${pad2(date.day)}`;
