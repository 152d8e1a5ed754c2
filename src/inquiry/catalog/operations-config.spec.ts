import { describe, expect, it } from '@jest/globals';
import { parseInquiryOperations } from './operations-config.js';

const entry = (overrides: Record<string, unknown> = {}) => ({
  name: 'card-to-iban',
  upstreamPath: '/api/v5/KYC/CardToIban',
  fields: { cardNumber: { type: 'cardNumber' } },
  ...overrides,
});

function problemsOf(value: unknown): string[] {
  const problems: string[] = [];
  parseInquiryOperations(typeof value === 'string' ? value : JSON.stringify(value), problems);
  return problems;
}

describe('INQUIRY_OPERATIONS', () => {
  it('is the built-ins alone when unset', () => {
    const problems: string[] = [];
    expect(parseInquiryOperations(undefined, problems).map((o) => o.name)).toEqual(['shahkar', 'iban']);
    expect(problems).toEqual([]);
  });

  it("adds the contract's example entries after the built-ins, with their types", () => {
    const problems: string[] = [];
    const operations = parseInquiryOperations(
      JSON.stringify([
        entry({ advanced: false, description: 'The IBAN behind a bank card' }),
        {
          name: 'iban-ownership',
          upstreamPath: '/api/v5/KYC/IbanOwnership',
          fields: {
            iban: { type: 'iban' },
            nationalCode: { type: 'nationalCode' },
            birthDate: { type: 'persianDate' },
            note: { type: 'text', maxLength: 20, optional: true },
            kind: { type: 'enum', values: ['a', 'b'] },
            ref: { type: 'digits', minLength: 2, maxLength: 8 },
          },
        },
      ]),
      problems,
    );
    expect(problems).toEqual([]);
    expect(operations.map((o) => [o.name, o.advanced, o.builtIn])).toEqual([
      ['shahkar', true, true],
      ['iban', true, true],
      ['card-to-iban', false, false],
      ['iban-ownership', true, false],
    ]);
    expect(operations[3].fields.map((f) => [f.name, f.optional])).toEqual([
      ['iban', false],
      ['nationalCode', false],
      ['birthDate', false],
      ['note', true],
      ['kind', false],
      ['ref', false],
    ]);
  });

  it.each([
    ['not JSON', '[{', 'INQUIRY_OPERATIONS: is not valid JSON'],
    ['not an array', { name: 'x' }, 'INQUIRY_OPERATIONS: must be a JSON array of operations'],
    [
      '51 entries',
      Array.from({ length: 51 }, (_, i) => entry({ name: `op-${i}` })),
      'INQUIRY_OPERATIONS: at most 50 operations (51 given)',
    ],
    ['an entry not an object', [7], 'INQUIRY_OPERATIONS[0]: must be an object'],
    [
      'an unknown setting',
      [entry({ price: 3 })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): has an unknown setting (allowed: name, upstreamPath, fields, advanced, description)',
    ],
    ['a bad name', [entry({ name: 'Card' })], 'INQUIRY_OPERATIONS[0]: name: must match ^[a-z][a-z0-9-]{1,39}$'],
    ['a one-letter name', [entry({ name: 'c' })], 'INQUIRY_OPERATIONS[0]: name: must match ^[a-z][a-z0-9-]{1,39}$'],
    [
      "a built-in's name",
      [entry({ name: 'shahkar' })],
      'INQUIRY_OPERATIONS[0] ("shahkar"): name: is already taken by a built-in or an earlier entry',
    ],
    [
      'a repeated name',
      [entry(), entry()],
      'INQUIRY_OPERATIONS[1] ("card-to-iban"): name: is already taken by a built-in or an earlier entry',
    ],
    [
      'a path outside /api/v5/',
      [entry({ upstreamPath: '/api/v4/X' })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): upstreamPath: must match ^\\/api\\/v5\\/[A-Za-z0-9_/-]+$',
    ],
    [
      'a path with //',
      [entry({ upstreamPath: '/api/v5/KYC//X' })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): upstreamPath: must not contain // or ..',
    ],
    [
      'a path with a query',
      [entry({ upstreamPath: '/api/v5/X?a=1' })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): upstreamPath: must match ^\\/api\\/v5\\/[A-Za-z0-9_/-]+$',
    ],
    [
      'advanced not boolean',
      [entry({ advanced: 'no' })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): advanced: must be true or false',
    ],
    [
      'no fields',
      [entry({ fields: {} })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields: must declare 1 to 20 fields',
    ],
    [
      '21 fields',
      [entry({ fields: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`f${i}`, { type: 'iban' }])) })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields: must declare 1 to 20 fields',
    ],
    [
      'a bad field name',
      [entry({ fields: { 'card-number': { type: 'cardNumber' } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields: a field name must match ^[a-zA-Z][a-zA-Z0-9]{0,39}$',
    ],
    [
      'a reserved field',
      [entry({ fields: { trackId: { type: 'digits', minLength: 1, maxLength: 2 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.trackId: is reserved (the gateway sends it)',
    ],
    [
      'trackId in another casing (the upstream may bind names regardless of case)',
      [entry({ fields: { TrackId: { type: 'digits', minLength: 1, maxLength: 2 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.TrackId: is reserved (the gateway sends it)',
    ],
    [
      'requestHandlingType in another casing',
      [entry({ fields: { RequestHandlingType: { type: 'enum', values: ['advanced'] } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.RequestHandlingType: is reserved (the gateway sends it)',
    ],
    [
      'the name advanced, whose scope kyc:advanced already means advanced handling',
      [entry({ name: 'advanced' })],
      'INQUIRY_OPERATIONS[0] ("advanced"): name: is reserved (kyc:advanced is the scope of advanced handling)',
    ],
    [
      'an unknown type',
      [entry({ fields: { a: { type: 'date' } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.type: must be one of nationalCode, mobile, iban, cardNumber, postalCode, persianDate, digits, text, enum',
    ],
    [
      'a setting of another type',
      [entry({ fields: { a: { type: 'iban', maxLength: 3 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a: a iban field takes only type, optional',
    ],
    [
      'optional false',
      [entry({ fields: { a: { type: 'iban', optional: false } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.optional: must be true when given',
    ],
    [
      'digits over 64',
      [entry({ fields: { a: { type: 'digits', minLength: 1, maxLength: 65 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.maxLength: must be a whole number from 1 to 64',
    ],
    [
      'digits min over max',
      [entry({ fields: { a: { type: 'digits', minLength: 5, maxLength: 4 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a: minLength must not exceed maxLength',
    ],
    [
      'text without maxLength',
      [entry({ fields: { a: { type: 'text' } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.maxLength: must be a whole number from 1 to 200',
    ],
    [
      'text over 200',
      [entry({ fields: { a: { type: 'text', maxLength: 201 } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.maxLength: must be a whole number from 1 to 200',
    ],
    [
      'enum without values',
      [entry({ fields: { a: { type: 'enum', values: [] } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.values: must be an array of 1 to 50 strings',
    ],
    [
      'enum with 51 values',
      [entry({ fields: { a: { type: 'enum', values: Array.from({ length: 51 }, (_, i) => `v${i}`) } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.values: must be an array of 1 to 50 strings',
    ],
    [
      'enum repeating a value',
      [entry({ fields: { a: { type: 'enum', values: ['x', 'x'] } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.values: must not repeat a value',
    ],
    [
      'enum with an untrimmed value',
      [entry({ fields: { a: { type: 'enum', values: [' x'] } } })],
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): fields.a.values: each must be a non-empty string of at most 200 characters, trimmed, NFC, ASCII digits',
    ],
  ])('fails the start on %s, naming the variable, the entry and the problem', (_, value, problem) => {
    expect(problemsOf(value)).toEqual([problem]);
  });

  it.each([
    '/api/v5/%2e%2e/admin',
    '/api/v5/KYC/%2FX',
    '/api/v5/..\\admin',
    '/api/v5/KYC\\X',
    '/api/v5/KYC/X;jsessionid=1',
    '/api/v5/KYC/X\n',
    '/api/v5/KYC/\u0425',
    '/api/v5/KYC/X\u2215..\u2215y',
    '/api/v5/./X',
    '/api/v5/',
  ])('refuses the upstreamPath %j, which could leave /api/v5 or name another resource', (upstreamPath) => {
    expect(problemsOf([entry({ upstreamPath })])).toEqual([
      'INQUIRY_OPERATIONS[0] ("card-to-iban"): upstreamPath: must match ^\\/api\\/v5\\/[A-Za-z0-9_/-]+$',
    ]);
  });

  it('never echoes a bad name or a description', () => {
    const problems = problemsOf([entry({ name: 'SECRET-VALUE', description: 'x'.repeat(501) })]);
    expect(problems.join()).not.toContain('SECRET-VALUE');
  });
});
