import { describe, expect, it } from '@jest/globals';
import { BudgetCalendar } from './budget-windows.js';

/** The windows at an instant, as ISO strings (a fake clock: the instant is all the calendar reads). */
function at(timeZone: string, calendar: 'gregory' | 'persian', iso: string) {
  const { daily, monthly } = new BudgetCalendar(timeZone, calendar).windowsAt(Date.parse(iso));
  const show = (w: typeof daily) => [w.id, new Date(w.startsAt).toISOString(), new Date(w.resetsAt).toISOString()];
  return { daily: show(daily), monthly: show(monthly) };
}

describe('BudgetCalendar', () => {
  it('UTC: a day ends at midnight UTC, a month and a year at their first midnight', () => {
    expect(at('UTC', 'gregory', '2026-11-24T23:59:59.999Z')).toEqual({
      daily: ['d2026-11-24', '2026-11-24T00:00:00.000Z', '2026-11-25T00:00:00.000Z'],
      monthly: ['m2026-11', '2026-11-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
    });
    expect(at('UTC', 'gregory', '2026-12-31T23:59:59.999Z').monthly).toEqual([
      'm2026-12',
      '2026-12-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
    expect(at('UTC', 'gregory', '2027-01-01T00:00:00.000Z').daily[0]).toBe('d2027-01-01');
  });

  it('Asia/Tehran (UTC+03:30): the day turns at 20:30 UTC', () => {
    expect(at('Asia/Tehran', 'gregory', '2026-11-24T20:29:59.999Z').daily).toEqual([
      'd2026-11-24',
      '2026-11-23T20:30:00.000Z',
      '2026-11-24T20:30:00.000Z',
    ]);
    expect(at('Asia/Tehran', 'gregory', '2026-11-24T20:30:00.000Z').daily[0]).toBe('d2026-11-25');
    expect(at('Asia/Tehran', 'gregory', '2026-11-30T20:30:00.000Z').monthly).toEqual([
      'm2026-12',
      '2026-11-30T20:30:00.000Z',
      '2026-12-31T20:30:00.000Z',
    ]);
  });

  it('Persian calendar: Esfand 1404 ends and 1 Farvardin 1405 begins at Tehran midnight (Nowruz)', () => {
    expect(at('Asia/Tehran', 'persian', '2026-03-20T20:29:59.999Z').monthly).toEqual([
      'mfa1404-12',
      '2026-02-19T20:30:00.000Z',
      '2026-03-20T20:30:00.000Z',
    ]);
    // Farvardin has 31 days: 1 Ordibehesht 1405 is 21 April 2026.
    expect(at('Asia/Tehran', 'persian', '2026-03-20T20:30:00.000Z')).toEqual({
      daily: ['d2026-03-21', '2026-03-20T20:30:00.000Z', '2026-03-21T20:30:00.000Z'],
      monthly: ['mfa1405-01', '2026-03-20T20:30:00.000Z', '2026-04-20T20:30:00.000Z'],
    });
    // Mehr onwards has 30 days: 1 Azar 1405 (22 November 2026) to 1 Dey (22 December).
    expect(at('Asia/Tehran', 'persian', '2026-11-24T12:00:00.000Z').monthly).toEqual([
      'mfa1405-09',
      '2026-11-21T20:30:00.000Z',
      '2026-12-21T20:30:00.000Z',
    ]);
    // The Persian month in UTC turns at midnight UTC.
    expect(at('UTC', 'persian', '2026-03-21T00:00:00.000Z').monthly[0]).toBe('mfa1405-01');
  });

  it('a daylight-saving switch: a 23-hour and a 25-hour day', () => {
    // New York springs forward on 8 March 2026 (EST -5 to EDT -4).
    expect(at('America/New_York', 'gregory', '2026-03-08T12:00:00Z').daily).toEqual([
      'd2026-03-08',
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
    ]);
    // Berlin falls back on 25 October 2026 (CEST +2 to CET +1).
    expect(at('Europe/Berlin', 'gregory', '2026-10-25T12:00:00Z').daily).toEqual([
      'd2026-10-25',
      '2026-10-24T22:00:00.000Z',
      '2026-10-25T23:00:00.000Z',
    ]);
    expect(at('Europe/Berlin', 'gregory', '2026-10-25T12:00:00Z').monthly).toEqual([
      'm2026-10',
      '2026-09-30T22:00:00.000Z',
      '2026-10-31T23:00:00.000Z',
    ]);
  });

  it('a switch that skips midnight: the day begins at 01:00 local', () => {
    // Iran kept daylight saving until 2022: 2 Farvardin 1401 began at 01:00 +04:30.
    expect(at('Asia/Tehran', 'persian', '2022-03-22T12:00:00Z').daily).toEqual([
      'd2022-03-22',
      '2022-03-21T20:30:00.000Z',
      '2022-03-22T19:30:00.000Z',
    ]);
  });

  it('keeps its windows until the day resets, then moves on', () => {
    const calendar = new BudgetCalendar('UTC', 'gregory');
    const first = calendar.windowsAt(Date.parse('2026-11-24T10:00:00Z'));
    expect(calendar.windowsAt(Date.parse('2026-11-24T23:00:00Z'))).toBe(first);
    expect(calendar.windowsAt(Date.parse('2026-11-25T00:00:00Z')).daily.id).toBe('d2026-11-25');
    // A clock set back is not served the later window.
    expect(calendar.windowsAt(Date.parse('2026-11-24T10:00:00Z')).daily.id).toBe('d2026-11-24');
  });
});
