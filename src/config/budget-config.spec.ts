import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_INQUIRY_PRICES,
  budgetConfigFrom,
  parseBudgets,
  parseInquiryPrices,
  parseUnitPrice,
} from './budget-config.js';
import { BUILT_IN_OPERATIONS } from '../inquiry/catalog/built-in-operations.js';

describe('budget configuration', () => {
  it('reads budgets per client and for all callers', () => {
    const problems: string[] = [];
    expect(
      parseBudgets('[{"clientId":"svc-a","daily":1000,"monthly":20000},{"clientId":"*","monthly":5}]', problems),
    ).toEqual([
      { clientId: 'svc-a', daily: 1000, monthly: 20000 },
      { clientId: '*', monthly: 5 },
    ]);
    expect(problems).toEqual([]);
  });

  it('names the entry and field of every problem, never the value', () => {
    const problems: string[] = [];
    parseBudgets(
      '[{"clientId":"d","daily":-1},{"clientId":"a","daily":1},{"clientId":"a","daily":2},{"clientId":"b"},{"clientId":"c","weekly":2,"daily":1},"x"]',
      problems,
    );
    expect(problems).toEqual([
      'BUDGETS[0].daily: must be a whole number of units',
      'BUDGETS[2].clientId: has a budget already',
      'BUDGETS[3]: needs daily, monthly or both',
      'BUDGETS[4]: unknown field (only clientId, daily, monthly)',
      'BUDGETS[5]: must be an object',
    ]);
    const more: string[] = [];
    parseBudgets('{', more);
    parseBudgets('{}', more);
    expect(more).toEqual([
      'BUDGETS: is not valid JSON',
      'BUDGETS: must be a JSON array of {clientId, daily?, monthly?}',
    ]);
  });

  it('prices every operation and handling type, with the contract default', () => {
    const problems: string[] = [];
    expect(parseInquiryPrices(undefined, BUILT_IN_OPERATIONS, problems)).toEqual(DEFAULT_INQUIRY_PRICES);
    expect(
      parseInquiryPrices(
        '{"shahkar":{"standard":2,"advanced":5},"iban":{"standard":1,"advanced":4}}',
        BUILT_IN_OPERATIONS,
        problems,
      ),
    ).toEqual({ shahkar: { standard: 2, advanced: 5 }, iban: { standard: 1, advanced: 4 } });
    expect(problems).toEqual([]);
    parseInquiryPrices('{"shahkar":{"standard":0,"advanced":5},"iban":{"standard":1}}', BUILT_IN_OPERATIONS, problems);
    expect(problems).toEqual([
      'INQUIRY_PRICES.shahkar.standard: must be a whole number of units, at least 1',
      'INQUIRY_PRICES.iban.advanced: must be a whole number of units, at least 1',
    ]);
  });

  it('fails the start when an added operation has no price, or a price names no operation', () => {
    const problems: string[] = [];
    const catalog = [...BUILT_IN_OPERATIONS, { name: 'card-to-iban', advanced: false }];
    parseInquiryPrices(undefined, catalog, problems);
    expect(problems).toEqual([
      'INQUIRY_PRICES.card-to-iban: is missing (every operation of the catalog must be priced)',
    ]);
    const priced = parseInquiryPrices(
      '{"shahkar":{"standard":1,"advanced":3},"iban":{"standard":1,"advanced":3},"card-to-iban":{"standard":2}}',
      catalog,
      ((problems.length = 0), problems),
    );
    expect(problems).toEqual([]);
    expect(priced['card-to-iban']).toEqual({ standard: 2, advanced: 2 });
    parseInquiryPrices(
      '{"shahkar":{"standard":1,"advanced":3},"iban":{"standard":1,"advanced":3},"card-to-iban":{"standard":2},"typo":{"standard":1}}',
      catalog,
      problems,
    );
    expect(problems).toEqual([
      'INQUIRY_PRICES: must be {"<operation>":{"standard":n,"advanced":n},…} for every operation (an operation not in the catalog is priced)',
    ]);
  });

  it('refuses an unknown time zone by its variable', () => {
    const problems: string[] = [];
    budgetConfigFrom({ BUDGET_TIMEZONE: 'Mars/Olympus', BUDGET_CALENDAR: 'persian' }, undefined, problems);
    expect(problems).toEqual(['BUDGET_TIMEZONE: must be an IANA time zone name such as UTC or Asia/Tehran']);
  });
});

describe('COST_UNIT_PRICE', () => {
  it('reads a decimal string amount and an ISO 4217 code', () => {
    const problems: string[] = [];
    expect(parseUnitPrice('{"amount":"25000","currency":"IRR"}', problems)).toEqual({
      amount: '25000',
      currency: 'IRR',
    });
    expect(parseUnitPrice('{"amount":"0.000001","currency":"EUR"}', problems)?.amount).toBe('0.000001');
    // Leading zeros dropped, the fraction kept as written: the form the ledger records and reads back.
    expect(parseUnitPrice('{"amount":"007.50","currency":"EUR"}', problems)?.amount).toBe('7.50');
    expect(parseUnitPrice('{"amount":"000","currency":"EUR"}', problems)?.amount).toBe('0');
    expect(parseUnitPrice(undefined, problems)).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it('refuses a float, a negative, too many decimals or a bad code, naming the variable and never the value', () => {
    const problems: string[] = [];
    for (const raw of [
      '{"amount":98765,"currency":"IRR"}',
      '{"amount":"-4321","currency":"IRR"}',
      '{"amount":"0.1234567","currency":"IRR"}',
      '{"amount":"1e3","currency":"IRR"}',
      '{"amount":"1","currency":"irr"}',
      '{"amount":"1","currency":"IRR","vat":"9"}',
      '"25000"',
      '{',
    ]) {
      expect(parseUnitPrice(raw, problems)).toBeUndefined();
    }
    expect(problems).toHaveLength(8);
    for (const problem of problems) expect(problem).toMatch(/^COST_UNIT_PRICE/);
    expect(problems.join('\n')).not.toMatch(/98765|4321|1234567|1e3|irr\b/);
    const config = budgetConfigFrom(
      { BUDGET_TIMEZONE: 'UTC', BUDGET_CALENDAR: 'gregory', COST_UNIT_PRICE: '{"amount":"2.5","currency":"EUR"}' },
      undefined,
      [],
    );
    expect(config.unitPrice).toEqual({ amount: '2.5', currency: 'EUR' });
  });
});
