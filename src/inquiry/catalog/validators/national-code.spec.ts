import { describe, it, expect } from '@jest/globals';
import { normaliseNationalCode } from './national-code.js';

const fa = (s: string) => s.replace(/[0-9]/g, (d) => '۰۱۲۳۴۵۶۷۸۹'[Number(d)]);
const ar = (s: string) => s.replace(/[0-9]/g, (d) => '٠١٢٣٤٥٦٧٨٩'[Number(d)]);

/** Independent reference implementation of the check digit (weights 10..2, mod 11). */
function referenceCheck(code: string): boolean {
  let sum = 0;
  for (let i = 0; i < 9; i++) sum += Number(code[i]) * (10 - i);
  const r = sum % 11;
  const check = Number(code[9]);
  return r < 2 ? check === r : check === 11 - r;
}

// Published examples from several persian-tools / validator test suites and blog posts,
// each cross-checked with referenceCheck below.
const VALID = ['0499370899', '0790419904', '0084575948', '0067749828', '0013542419', '0076229645', '1234567891'];

describe('normaliseNationalCode', () => {
  it.each(VALID)('accepts %s', (code) => {
    expect(referenceCheck(code)).toBe(true);
    expect(normaliseNationalCode(code)).toBe(code);
  });

  it('accepts codes whose first three digits are not a known city prefix (no prefix check)', () => {
    // 999 is not in persian-tools' prefix list; the check digit is valid.
    const code = '9990000011'.slice(0, 9);
    let sum = 0;
    for (let i = 0; i < 9; i++) sum += Number(code[i]) * (10 - i);
    const r = sum % 11;
    const full = code + String(r < 2 ? r : 11 - r);
    expect(referenceCheck(full)).toBe(true);
    expect(normaliseNationalCode(full)).toBe(full);
  });

  it.each(VALID)('accepts the Persian- and Arabic-digit spelling of %s', (code) => {
    expect(normaliseNationalCode(fa(code))).toBe(code);
    expect(normaliseNationalCode(ar(code))).toBe(code);
  });

  it('accepts mixed digit scripts and trims surrounding whitespace', () => {
    expect(normaliseNationalCode('۰۴۹۹٣٧0899')).toBe('0499370899');
    expect(normaliseNationalCode('  0499370899\t\n')).toBe('0499370899');
    expect(normaliseNationalCode('\u00a0۰۴۹۹۳۷۰۸۹۹ ')).toBe('0499370899');
  });

  it.each([
    '0000000000',
    '1111111111',
    '2222222222',
    '3333333333',
    '4444444444',
    '5555555555',
    '6666666666',
    '7777777777',
    '8888888888',
    '9999999999',
  ])('rejects the repeated-digit code %s', (code) => {
    expect(normaliseNationalCode(code)).toBeNull();
    expect(normaliseNationalCode(fa(code))).toBeNull();
  });

  it('rejects a wrong check digit', () => {
    for (const code of ['0499370898', '0790419905', '0084575940', '0067749829', '0013542410', '0076229640']) {
      expect(referenceCheck(code)).toBe(false);
      expect(normaliseNationalCode(code)).toBeNull();
      expect(normaliseNationalCode(fa(code))).toBeNull();
    }
  });

  it('rejects 8 and 9 digits (no left padding), even when zero-padding would make them valid', () => {
    expect(normaliseNationalCode('499370899')).toBeNull();
    expect(normaliseNationalCode('84575948')).toBeNull();
    expect(normaliseNationalCode('۴۹۹۳۷۰۸۹۹')).toBeNull();
  });

  it('rejects 11 digits, even when the last 10 are a valid code', () => {
    expect(normaliseNationalCode('10499370899')).toBeNull();
    expect(normaliseNationalCode('00499370899')).toBeNull();
  });

  it('rejects letters, separators, signs and inner spaces', () => {
    for (const input of [
      '049937089a',
      'a499370899',
      '049-937-0899',
      '0499 370899',
      '+499370899',
      '04993708.9',
      '0x499370899',
      '',
      '   ',
    ]) {
      expect(normaliseNationalCode(input)).toBeNull();
    }
  });

  it('rejects other Unicode digits (full-width)', () => {
    expect(normaliseNationalCode('０４９９３７０８９９')).toBeNull();
  });

  it('returns null rather than throwing on a non-string at run time', () => {
    expect(normaliseNationalCode(499370899 as unknown as string)).toBeNull();
    expect(normaliseNationalCode(null as unknown as string)).toBeNull();
  });
});
