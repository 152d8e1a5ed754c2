import { describe, expect, it } from '@jest/globals';
import { UPSTREAM_MESSAGE_MAX, upstreamMessageOf } from './ledger-entry.js';

describe('the upstream message the ledger keeps', () => {
  it('masks long digit runs (a national code, a mobile, an IBAN) and bounds the length', () => {
    expect(upstreamMessageOf('National code 0499370899 and mobile 09121234567 do not match')).toBe(
      'National code ########## and mobile ########### do not match',
    );
    expect(upstreamMessageOf('IBAN IR062960000000100324200001 unknown')).toBe(`IBAN IR${'#'.repeat(24)} unknown`);
    expect(upstreamMessageOf('کد ملی ۰۴۹۹۳۷۰۸۹۹ نامعتبر')).toBe('کد ملی ########## نامعتبر');
    expect(upstreamMessageOf('Supplier error 4001')).toBe('Supplier error 4001');
    expect(upstreamMessageOf('x'.repeat(1000))).toHaveLength(UPSTREAM_MESSAGE_MAX);
    expect(upstreamMessageOf('line\nbreak')).toBe('line break');
    expect(upstreamMessageOf('')).toBeUndefined();
    expect(upstreamMessageOf(15)).toBeUndefined();
  });

  it('never keeps half a surrogate pair: the cut through an emoji, or a lone one from the provider, is U+FFFD', () => {
    expect(upstreamMessageOf(`${'x'.repeat(199)}😀`)).toBe(`${'x'.repeat(199)}\ufffd`);
    expect(upstreamMessageOf('bad \ud800 and \udfff end 😀')).toBe('bad \ufffd and \ufffd end 😀');
  });

  it.each([
    ['a national code', 'National code 0499-370899 does not match', 'National code ####-###### does not match'],
    [
      'a spaced national code',
      'National code 049 937 0899 does not match',
      'National code ### ### #### does not match',
    ],
    ['a spaced mobile', 'Mobile 0912 123 4567 does not match', 'Mobile #### ### #### does not match'],
    ['a dashed IBAN', 'IBAN IR06-2960-0000-0010-0324-2000-01 unknown', 'IBAN IR##-####-####-####-####-####-## unknown'],
    ['a Persian national code', 'کد ملی ۰۴۹-۹۳۷۰۸۹-۹ نامعتبر', 'کد ملی ###-######-# نامعتبر'],
  ])('masks %s whose digits are separated by spaces, dashes or dots', (_label, message, kept) => {
    expect(upstreamMessageOf(message)).toBe(kept);
  });
});
