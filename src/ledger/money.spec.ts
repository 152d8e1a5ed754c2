import { describe, expect, it } from '@jest/globals';
import { moneyOf, sumOf } from './money.js';

describe('money from cost units', () => {
  it('multiplies exactly at the price scale, where a float would not', () => {
    expect(moneyOf(3, { amount: '25000', currency: 'IRR' })).toEqual({ amount: '75000', currency: 'IRR' });
    expect(moneyOf(3, { amount: '0.1', currency: 'EUR' }).amount).toBe('0.3');
    expect(0.1 * 3).not.toBe(0.3);
    expect(moneyOf(7, { amount: '0.000001', currency: 'USD' }).amount).toBe('0.000007');
    expect(moneyOf(0, { amount: '12.50', currency: 'EUR' }).amount).toBe('0.00');
  });

  it('stays exact far beyond 2^53', () => {
    expect(moneyOf(2_000_000_000, { amount: '999999999999999999', currency: 'IRR' }).amount).toBe(
      '1999999999999999998000000000',
    );
    expect(moneyOf(2n ** 40n, { amount: '1.5', currency: 'IRR' }).amount).toBe('1649267441664.0');
  });

  it('adds amounts of different scales exactly, at the larger scale', () => {
    expect(sumOf('25000', '120002.0')).toBe('145002.0');
    expect(sumOf('0.10', '0.2')).toBe('0.30');
    expect(sumOf('999999999999999999.000001', '0.999999')).toBe('1000000000000000000.000000');
  });
});
