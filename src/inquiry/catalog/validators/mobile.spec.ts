import { describe, it, expect } from '@jest/globals';
import { normaliseIranianMobile } from './mobile.js';

const fa = (s: string) => s.replace(/[0-9]/g, (d) => '۰۱۲۳۴۵۶۷۸۹'[Number(d)]);
const ar = (s: string) => s.replace(/[0-9]/g, (d) => '٠١٢٣٤٥٦٧٨٩'[Number(d)]);

describe('normaliseIranianMobile', () => {
  it.each([
    ['09121234567', '09121234567'],
    ['+989121234567', '09121234567'],
    ['989121234567', '09121234567'],
    ['9121234567', '09121234567'],
    ['00989121234567', '09121234567'],
    ['09351234567', '09351234567'],
    ['+989901234567', '09901234567'],
  ])('accepts %s as %s', (input, expected) => {
    expect(normaliseIranianMobile(input)).toBe(expected);
  });

  it("accepts any 09 + 9 digits, including prefixes missing from persian-tools' operator list", () => {
    // e.g. 0963…, 0999… (new ranges), 0900…
    for (const m of ['09631234567', '09991234567', '09001234567', '09401234567']) {
      expect(normaliseIranianMobile(m)).toBe(m);
    }
  });

  it('is not confused by a national number starting with 98', () => {
    expect(normaliseIranianMobile('9891234567')).toBe('09891234567');
    expect(normaliseIranianMobile('09891234567')).toBe('09891234567');
    expect(normaliseIranianMobile('989891234567')).toBe('09891234567');
  });

  it('accepts Persian and Arabic-Indic digits in every spelling', () => {
    for (const input of ['09121234567', '+989121234567', '989121234567', '9121234567', '00989121234567']) {
      expect(normaliseIranianMobile(fa(input))).toBe('09121234567');
      expect(normaliseIranianMobile(ar(input))).toBe('09121234567');
    }
    expect(normaliseIranianMobile('۰۹۱۲١٢٣4567')).toBe('09121234567');
  });

  it.each([
    ['spaces', '0912 123 4567'],
    ['dashes', '0912-123-4567'],
    ['both, after +98', '+98 912-123 4567'],
    ['after 0098', '0098-912-1234567'],
    ['in Persian digits', '۰۹۱۲ ۱۲۳ ۴۵۶۷'],
  ])('accepts %s between the characters (%s), as people type them', (_label, input) => {
    expect(normaliseIranianMobile(input)).toBe('09121234567');
  });

  it('trims surrounding whitespace', () => {
    expect(normaliseIranianMobile('  09121234567 ')).toBe('09121234567');
    expect(normaliseIranianMobile('\t+989121234567\n')).toBe('09121234567');
  });

  it.each([
    ['landline', '02112345678'],
    ['landline with country code', '+982112345678'],
    ['too short', '0912123456'],
    ['too long', '091212345678'],
    ['too long with +98', '+9891212345678'],
    ['+98 with a trunk zero', '+9809121234567'],
    ['0 without 9', '0812345678'],
    ['letters', '0912123456a'],
    ['a leading dash', '-09121234567'],
    ['a trailing dash', '09121234567-'],
    ['a tab inside', '0912\t1234567'],
    ['dots', '0912.123.4567'],
    ['brackets', '(0912)1234567'],
    ['other country code', '+4479121234567'],
    ['plus without country code', '+09121234567'],
    ['single zero prefix 00', '009121234567'],
    ['empty', ''],
    ['whitespace only', '   '],
    ['full-width digits', '０９１２１２３４５６７'],
  ])('rejects %s', (_label, input) => {
    expect(normaliseIranianMobile(input)).toBeNull();
  });

  it('returns null rather than throwing on a non-string at run time', () => {
    expect(normaliseIranianMobile(9121234567 as unknown as string)).toBeNull();
    expect(normaliseIranianMobile(undefined as unknown as string)).toBeNull();
  });
});
