import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { fieldTypeOf } from './field-types.js';
import { FIELD_TYPE_NAMES, type FieldDeclaration } from './operation.js';

const declarations: FieldDeclaration[] = FIELD_TYPE_NAMES.map((type) =>
  type === 'digits'
    ? { type, minLength: 1, maxLength: 64 }
    : type === 'text'
      ? { type, maxLength: 200 }
      : type === 'enum'
        ? { type, values: ['a', 'b'] }
        : { type },
);

/** Strings of every kind: any code point, digits of the three scripts, separators, combining marks. */
const anyString = fc.oneof(
  fc.string({ unit: 'grapheme-composite', maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({
    unit: fc.constantFrom(...'0123456789۰۱۲۳۴۵۶۷۸۹٠١٢٣٤٥٦٧٨٩ -/+IRir\u0301\u00a0\t'.split('')),
    maxLength: 40,
  }),
);

describe.each(declarations)('field type $type', (declaration) => {
  const type = fieldTypeOf(declaration);

  it('normalises idempotently and never throws, whatever the string', () => {
    fc.assert(
      fc.property(anyString, (input) => {
        const once = type.normalise(input);
        expect(type.normalise(once)).toBe(once);
        expect(typeof type.accepts(once)).toBe('boolean');
      }),
      { numRuns: 1000 },
    );
  });

  it('answers a string of 100 000 characters at once (no backtracking blow-up)', () => {
    const started = performance.now();
    for (const long of ['9'.repeat(100_000), `${'1 -'.repeat(33_333)}x`, `1403/${'1'.repeat(99_990)}`]) {
      type.accepts(type.normalise(long));
    }
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
