import { randomInt } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { normaliseIban } from './iban.js';
import { IBAN_PATTERN, MOBILE_PATTERN, NATIONAL_CODE_PATTERN } from './input-patterns.js';
import { normaliseIranianMobile } from './mobile.js';
import { normaliseNationalCode } from './national-code.js';

// As JSON Schema validators compile an OpenAPI `pattern` (ECMA-262, Unicode).
const compile = (pattern: string) => new RegExp(pattern, 'u');

const FA = '۰۱۲۳۴۵۶۷۸۹';
const AR = '٠١٢٣٤٥٦٧٨٩';
const persian = (s: string) => s.replace(/[0-9]/g, (d) => FA[Number(d)]);
const arabic = (s: string) => s.replace(/[0-9]/g, (d) => AR[Number(d)]);

/** Random strings over the characters that matter to these shapes. */
function fuzz(alphabet: string, maxLength: number, count: number): string[] {
  const chars = [...alphabet];
  return Array.from({ length: count }, () =>
    Array.from({ length: randomInt(0, maxLength + 1) }, () => chars[randomInt(chars.length)]).join(''),
  );
}

describe.each([
  {
    field: 'nationalCode',
    pattern: NATIONAL_CODE_PATTERN,
    normalise: normaliseNationalCode,
    valid: ['0499370899', ' 0499370899\t', persian('0499370899'), arabic('0499370899'), '04993708' + persian('99')],
    badShape: ['049937089', '04993708999', '0499-370899', '0499 370899', 'a499370899', ''],
    alphabet: '0123456789۰۹٠٩ -a',
    maxLength: 13,
  },
  {
    field: 'mobileNumber',
    pattern: MOBILE_PATTERN,
    normalise: normaliseIranianMobile,
    valid: [
      '09121234567',
      '+989121234567',
      '00989121234567',
      '989121234567',
      '9121234567',
      persian('+989121234567'),
      '+98 912 123 4567',
      '0912-123-4567',
      ' 0 9 1 2 - 1 2 3 - 4 5 6 7 ',
    ],
    badShape: ['0912123456', '-09121234567', '09121234567-', '08121234567', '+9809121234567', '0912.123.4567', ''],
    alphabet: '0189۰۸۹٠٨٩+ -',
    maxLength: 15,
  },
  {
    field: 'iban',
    pattern: IBAN_PATTERN,
    normalise: normaliseIban,
    valid: [
      'IR820540102680020817909002',
      'ir82 0540 1026 8002 0817 9090 02',
      ' I R820540102680020817909002 ',
      'IR' + persian('820540102680020817909002'),
    ],
    badShape: [
      'IR82054010268002081790900',
      'DE89370400440532013000',
      'IR82-0540-1026-8002-0817-9090-02',
      'IR8205401026800208179090021',
    ],
    alphabet: 'IRir0123456789۰٠ -',
    maxLength: 30,
  },
])('the OpenAPI pattern of $field', ({ pattern, normalise, valid, badShape, alphabet, maxLength }) => {
  const regex = compile(pattern);

  it('accepts every valid input', () => {
    for (const input of valid) {
      expect(normalise(input)).not.toBeNull();
      expect(regex.test(input)).toBe(true);
    }
  });

  it('refuses inputs of the wrong shape', () => {
    for (const input of badShape) expect(regex.test(input)).toBe(false);
  });

  it('accepts everything the validator accepts (fuzzed)', () => {
    for (const input of [...fuzz(alphabet, maxLength, 20_000), ...valid]) {
      if (normalise(input) !== null) expect(regex.test(input)).toBe(true);
    }
  });
});
