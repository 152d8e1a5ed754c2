import { describe, expect, it } from '@jest/globals';
import { ProblemException } from '../problem/problem.js';
import { ledgerDate, ledgerRange } from './ledger-dates.js';

function refusal(call: () => unknown): { code: string; field?: string } {
  try {
    call();
  } catch (error) {
    if (error instanceof ProblemException) return { code: error.code, field: error.toBody().errors?.[0]?.field };
    throw error;
  }
  throw new Error('accepted');
}

describe('ledgerDate', () => {
  it.each([
    ['2026-11-24', '2026-11-24T00:00:00.000Z'],
    ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31', '9999-12-31T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T12:30Z', '2000-02-29T12:30:00.000Z'],
    ['2026-11-24T03:30:00+03:30', '2026-11-24T00:00:00.000Z'],
    ['2026-11-24T00:00:00-01:00', '2026-11-24T01:00:00.000Z'],
    ['2026-11-24T00:00:00.123456789Z', '2026-11-24T00:00:00.123Z'],
    ['0099-06-01', '0099-06-01T00:00:00.000Z'],
  ])('takes %s as %s', (raw, iso) => {
    expect(ledgerDate('from', raw).toISOString()).toBe(iso);
  });

  it.each([
    // Outside what both engines store alike (year 0 was 503 on PGlite, 200 on a server).
    '0000-01-01',
    '0000-12-31T23:59:59Z',
    '0001-01-01T00:30:00+01:00',
    '9999-12-31T23:00:00-05:00',
    '10000-01-01',
    '+010000-01-01',
    '-000001-01-01',
    // Not a calendar date or time: `new Date` would roll these over.
    '2026-02-30',
    '2026-02-29',
    '1900-02-29',
    '2026-04-31',
    '2026-13-01',
    '2026-00-10',
    '2026-01-00',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T00:00:00+24:00',
    // Not the format: no zone (local time is ambiguous), words, empty, missing.
    '2026-01-01T00:00:00',
    '2026-1-1',
    'yesterday',
    '',
    undefined,
  ])('refuses %s as 400 validation_failed naming the field', (raw) => {
    expect(refusal(() => ledgerDate('to', raw))).toEqual({ code: 'validation_failed', field: 'to' });
  });
});

describe('ledgerRange', () => {
  it('takes the widest range both engines store', () => {
    const { from, to } = ledgerRange('0001-01-01', '9999-12-31');
    expect([from.toISOString(), to.toISOString()]).toEqual(['0001-01-01T00:00:00.000Z', '9999-12-31T00:00:00.000Z']);
  });

  it('refuses an empty or reversed range, naming to', () => {
    expect(refusal(() => ledgerRange('2026-01-02', '2026-01-02'))).toEqual({ code: 'validation_failed', field: 'to' });
    expect(refusal(() => ledgerRange('2026-01-02', '2026-01-01'))).toEqual({ code: 'validation_failed', field: 'to' });
  });

  it('names from when from is the bad one', () => {
    expect(refusal(() => ledgerRange('0000-01-01', '9999-12-31'))).toEqual({
      code: 'validation_failed',
      field: 'from',
    });
  });
});
