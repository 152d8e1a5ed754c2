import { describe, expect, it } from '@jest/globals';
import type { FieldType } from './field-type.js';
import { fieldTypeOf } from './field-types.js';
import type { FieldDeclaration } from './operation.js';

/** Each type: what it accepts (and sends upstream), and what it refuses. */
function behaves(type: FieldType, accepted: [string, string][], refused: string[]): void {
  it.each(accepted)('accepts %j as %j', (input, sent) => {
    expect(type.normalise(input)).toBe(sent);
    expect(type.accepts(type.normalise(input))).toBe(true);
  });
  it.each(refused)('refuses %j', (input) => expect(type.accepts(type.normalise(input))).toBe(false));
  it('accepts its own example and says what it expects without echoing a value', () => {
    expect(type.accepts(type.normalise(type.example))).toBe(true);
    expect(type.expected).toMatch(/^must be /);
    expect(new RegExp(type.pattern, 'u').test(type.example)).toBe(true);
  });
}

const of = (declaration: FieldDeclaration) => fieldTypeOf(declaration);

describe('nationalCode', () =>
  behaves(
    of({ type: 'nationalCode' }),
    [
      ['0499370899', '0499370899'],
      [' ۰۴۹۹۳۷۰۸۹۹ ', '0499370899'],
      ['٠٤٩٩٣٧٠٨٩٩', '0499370899'],
    ],
    ['0499370898', '1111111111', '499370899', '10499370899', ''],
  ));

describe('mobile', () =>
  behaves(
    of({ type: 'mobile' }),
    [
      ['09121234567', '09121234567'],
      ['+98 912 123 4567', '09121234567'],
      ['۹۱۲-۱۲۳-۴۵۶۷', '09121234567'],
    ],
    ['0812123456', '091212345678', '-09121234567', ''],
  ));

describe('iban', () =>
  behaves(
    of({ type: 'iban' }),
    [
      ['IR062960000000100324200001', 'IR062960000000100324200001'],
      ['ir06 2960 0000 0010 0324 2000 01', 'IR062960000000100324200001'],
    ],
    ['IR062960000000100324200002', 'DE89370400440532013000', 'IR06-2960-0000-0010-0324-2000-01'],
  ));

describe('cardNumber', () =>
  behaves(
    of({ type: 'cardNumber' }),
    [
      ['6037990000000006', '6037990000000006'],
      ['6037-9900-0000-0006', '6037990000000006'],
      ['۶۰۳۷ ۹۹۰۰ ۰۰۰۰ ۰۰۰۶', '6037990000000006'],
    ],
    ['6037990000000007', '603799000000006', '60379900000000060', '6037.9900.0000.0006'],
  ));

describe('postalCode', () =>
  behaves(
    of({ type: 'postalCode' }),
    [
      ['1314576543', '1314576543'],
      ['13145-76543', '1314576543'],
      ['۱۳۱۴۵ ۷۶۵۴۳', '1314576543'],
    ],
    ['131457654', '13145-765-43', '13145765432', 'abcde-fghij'],
  ));

describe('persianDate', () =>
  behaves(
    of({ type: 'persianDate' }),
    [
      ['1403/12/30', '1403/12/30'],
      ['1370-6-31', '1370/06/31'],
      ['۱۳۹۹/۱۲/۳۰', '1399/12/30'],
    ],
    ['1404/12/30', '1400/12/30', '1403/07/31', '1299/01/01', '1501/01/01', '1403/13/01', '1403/00/10', '1403/12-01'],
  ));

describe('digits', () =>
  behaves(
    of({ type: 'digits', minLength: 4, maxLength: 6 }),
    [
      ['1234', '1234'],
      ['۱۲ ۳۴-۵۶', '123456'],
    ],
    ['123', '1234567', '12a4', ''],
  ));

describe('text', () =>
  behaves(
    of({ type: 'text', maxLength: 5 }),
    [
      ['  علی ', 'علی'],
      ['e\u0301', '\u00e9'],
      // Persian needs the zero-width non-joiner (می‌خواهم); five characters after NFC fit five.
      ['می\u200Cخو', 'می\u200Cخو'],
      ['e\u0301e\u0301e\u0301e\u0301e\u0301', '\u00e9\u00e9\u00e9\u00e9\u00e9'],
    ],
    [
      ...['', '   ', 'abcdef', 'a\u0000b', 'a\nb'],
      // Bidi embeddings, overrides and isolates reorder what a reader of the record sees.
      ...['ab\u202Ecd', 'a\u202Ab', '\u2066x\u2069'],
      // Lone surrogates are no characters: the upstream would receive broken UTF-16.
      ...['\uD800', 'ab\uDC00c'],
    ],
  ));

describe('enum pattern', () => {
  it('is a valid unicode-mode pattern (as JSON Schema validators compile it) matching exactly the values', () => {
    const type = of({ type: 'enum', values: ['home-owner', 'a/b', 'c.d', 'x+(y)'] });
    const pattern = new RegExp(type.pattern, 'u');
    for (const value of ['home-owner', ' a/b ', 'c.d', 'x+(y)']) expect(pattern.test(value)).toBe(true);
    for (const value of ['homeXowner', 'cXd', 'x+y']) expect(pattern.test(value)).toBe(false);
  });
});

describe('enum', () =>
  behaves(
    of({ type: 'enum', values: ['individual', 'legal'] }),
    [
      ['legal', 'legal'],
      [' individual ', 'individual'],
    ],
    ['Legal', 'other', ''],
  ));
