import { describe, it, expect } from '@jest/globals';
import { toAsciiDigits } from './digits.js';

describe('toAsciiDigits', () => {
  it('converts Persian digits ۰–۹', () => {
    expect(toAsciiDigits('۰۱۲۳۴۵۶۷۸۹')).toBe('0123456789');
  });

  it('converts Arabic-Indic digits ٠–٩', () => {
    expect(toAsciiDigits('٠١٢٣٤٥٦٧٨٩')).toBe('0123456789');
  });

  it('converts mixed scripts and leaves other characters alone', () => {
    expect(toAsciiDigits('IR۸٢ 05a۴-+')).toBe('IR82 05a4-+');
    expect(toAsciiDigits('')).toBe('');
    expect(toAsciiDigits('abc')).toBe('abc');
  });

  it('does not touch other Unicode digits (e.g. full-width, Devanagari)', () => {
    expect(toAsciiDigits('１२')).toBe('１२');
  });
});
