import 'reflect-metadata';
import { describe, it, expect } from '@jest/globals';
import { ProblemException, type FieldError } from '../../problem/problem.js';
import { IbanRequestDto } from '../dto/iban-request.dto.js';
import { ShahkarRequestDto } from '../dto/shahkar-request.dto.js';
import {
  validateIdempotencyKey,
  validateInquiryBody,
  validateInquiryRequest,
  validateWithLibraries,
} from './inquiry-request.validation.js';

const NATIONAL_CODE = '0499370899';
const MOBILE = '09121234567';
const IBAN = 'IR820540102680020817909002';

/** Runs `fn`, expects a validation problem, returns its errors. */
function problemOf(fn: () => unknown): ProblemException {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemException);
    const problem = error as ProblemException;
    expect(problem.code).toBe('validation_failed');
    expect(problem.status).toBe(400);
    return problem;
  }
  throw new Error('expected a validation problem');
}
const errorsOf = (fn: () => unknown): FieldError[] => problemOf(fn).errors ?? [];

function expectOneEntryPerField(errors: FieldError[]): void {
  const fields = errors.map((e) => e.field);
  expect(new Set(fields).size).toBe(fields.length);
}

describe('validateInquiryBody: Shahkar', () => {
  it('returns a ShahkarRequestDto with normalised values and the default requestHandlingType', () => {
    const dto = validateInquiryBody(ShahkarRequestDto, { nationalCode: ' ۰۴۹۹۳۷۰۸۹۹ ', mobileNumber: '+98٩١٢١٢٣٤٥٦٧' });
    expect(dto).toBeInstanceOf(ShahkarRequestDto);
    expect({ ...dto }).toEqual({ nationalCode: NATIONAL_CODE, mobileNumber: MOBILE, requestHandlingType: 'standard' });
  });

  it.each(['9121234567', '989121234567', '00989121234567', '09121234567'])(
    'normalises mobile %s to 09…',
    (mobileNumber) => {
      expect(validateInquiryBody(ShahkarRequestDto, { nationalCode: NATIONAL_CODE, mobileNumber }).mobileNumber).toBe(
        MOBILE,
      );
    },
  );

  it('keeps an explicit requestHandlingType', () => {
    for (const requestHandlingType of ['standard', 'advanced'] as const) {
      const dto = validateInquiryBody(ShahkarRequestDto, {
        nationalCode: NATIONAL_CODE,
        mobileNumber: MOBILE,
        requestHandlingType,
      });
      expect(dto.requestHandlingType).toBe(requestHandlingType);
    }
  });

  it('reports every missing required field once', () => {
    const errors = errorsOf(() => validateInquiryBody(ShahkarRequestDto, {}));
    expect(errors).toEqual([
      { field: 'nationalCode', message: 'is required' },
      { field: 'mobileNumber', message: 'is required' },
    ]);
  });

  it('enforces types strictly: numbers, booleans, null, arrays and objects are not strings', () => {
    for (const value of [499370899, 9121234567, true, null, ['0499370899'], { value: '0499370899' }]) {
      const errors = errorsOf(() =>
        validateInquiryBody(ShahkarRequestDto, { nationalCode: value, mobileNumber: value }),
      );
      expect(errors).toEqual([
        { field: 'nationalCode', message: 'must be a string' },
        { field: 'mobileNumber', message: 'must be a string' },
      ]);
    }
  });

  it('refuses a deeply nested array where a string is expected (400, not a stack overflow in class-transformer)', () => {
    let deep: unknown = '0499370899';
    for (let level = 0; level < 20_000; level++) deep = [deep];
    const errors = errorsOf(() =>
      validateInquiryBody(ShahkarRequestDto, { nationalCode: deep, mobileNumber: MOBILE, requestHandlingType: deep }),
    );
    expect(errors).toEqual([
      { field: 'nationalCode', message: 'must be a string' },
      { field: 'requestHandlingType', message: 'must be one of: standard, advanced' },
    ]);
    let object: unknown = 'IR820540102680020817909002';
    for (let level = 0; level < 20_000; level++) object = { iban: object };
    expect(errorsOf(() => validateInquiryBody(IbanRequestDto, { iban: object }))).toEqual([
      { field: 'iban', message: 'must be a string' },
    ]);
  });

  it('rejects bad values with one entry per field, without echoing them', () => {
    const raw = { nationalCode: '0499370898', mobileNumber: '02112345678', requestHandlingType: 'ADVANCED' };
    const problem = problemOf(() => validateInquiryBody(ShahkarRequestDto, raw));
    const errors = problem.errors ?? [];
    expect(errors.map((e) => e.field)).toEqual(['nationalCode', 'mobileNumber', 'requestHandlingType']);
    expectOneEntryPerField(errors);
    const serialised = JSON.stringify(problem.toBody()) + problem.message;
    for (const value of Object.values(raw)) expect(serialised).not.toContain(value);
    expect(serialised).not.toContain('4993708');
    expect(serialised).not.toContain('2112345');
  });

  it.each([null, 'fast', 'Standard', 1, true, ['standard'], {}])(
    'rejects requestHandlingType %p',
    (requestHandlingType) => {
      const errors = errorsOf(() =>
        validateInquiryBody(ShahkarRequestDto, {
          nationalCode: NATIONAL_CODE,
          mobileNumber: MOBILE,
          requestHandlingType,
        }),
      );
      expect(errors).toEqual([{ field: 'requestHandlingType', message: 'must be one of: standard, advanced' }]);
    },
  );

  it('rejects each unknown field by name, and trackId with its own message', () => {
    const errors = errorsOf(() =>
      validateInquiryBody(ShahkarRequestDto, {
        nationalCode: NATIONAL_CODE,
        mobileNumber: MOBILE,
        trackId: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
        iban: IBAN,
        extra: 1,
      }),
    );
    expect(errors).toEqual([
      { field: 'trackId', message: 'may not be sent; the gateway stamps the trackId' },
      { field: 'iban', message: 'is not allowed' },
      { field: 'extra', message: 'is not allowed' },
    ]);
  });

  it('reports unknown and bad fields together, one entry each', () => {
    const errors = errorsOf(() =>
      validateInquiryBody(ShahkarRequestDto, { nationalCode: 'x', trackId: 'abc', NationalCode: NATIONAL_CODE }),
    );
    expect(errors).toEqual([
      { field: 'trackId', message: 'may not be sent; the gateway stamps the trackId' },
      { field: 'NationalCode', message: 'is not allowed' },
      { field: 'nationalCode', message: expect.stringContaining('national code') },
      { field: 'mobileNumber', message: 'is required' },
    ]);
    expectOneEntryPerField(errors);
  });

  it('does not let an own __proto__ or constructor key through', () => {
    const parsed = JSON.parse(
      `{"nationalCode":"${NATIONAL_CODE}","mobileNumber":"${MOBILE}","__proto__":{"x":1},"constructor":1}`,
    ) as object;
    const errors = errorsOf(() => validateInquiryBody(ShahkarRequestDto, parsed));
    expect(errors).toEqual([
      { field: '__proto__', message: 'is not allowed' },
      { field: 'constructor', message: 'is not allowed' },
    ]);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['an array', [{ nationalCode: NATIONAL_CODE, mobileNumber: MOBILE }]],
    ['a string', '{"nationalCode":"0499370899"}'],
    ['a number', 42],
    ['a boolean', true],
    ['a class instance', new Date()],
  ])('rejects a body that is %s with a single `body` entry', (_label, value) => {
    const problem = problemOf(() => validateInquiryBody(ShahkarRequestDto, value));
    expect(problem.errors).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
    expect(problem.detail).not.toContain('0499370899');
  });
});

describe('validateInquiryBody: IBAN', () => {
  it('normalises a friendly, lower-case, Persian-digit IBAN', () => {
    const dto = validateInquiryBody(IbanRequestDto, {
      iban: 'ir۸۲ ۰۵۴۰ 1026 8002 0817 9090 02',
      requestHandlingType: 'advanced',
    });
    expect(dto).toBeInstanceOf(IbanRequestDto);
    expect({ ...dto }).toEqual({ iban: IBAN, requestHandlingType: 'advanced' });
  });

  it('defaults requestHandlingType to standard', () => {
    expect(validateInquiryBody(IbanRequestDto, { iban: IBAN }).requestHandlingType).toBe('standard');
  });

  it('rejects a bad checksum, a foreign IBAN, a missing IBAN and a number, without echoing', () => {
    for (const iban of ['IR430570022880013447370101', 'DE89370400440532013000']) {
      const problem = problemOf(() => validateInquiryBody(IbanRequestDto, { iban }));
      expect(problem.errors).toEqual([{ field: 'iban', message: expect.stringContaining('Iranian IBAN') }]);
      expect(JSON.stringify(problem.toBody())).not.toContain(iban.slice(4, 14));
    }
    expect(errorsOf(() => validateInquiryBody(IbanRequestDto, {}))).toEqual([
      { field: 'iban', message: 'is required' },
    ]);
    expect(errorsOf(() => validateInquiryBody(IbanRequestDto, { iban: 820540102680020817909002 }))).toEqual([
      { field: 'iban', message: 'must be a string' },
    ]);
  });

  it('rejects Shahkar fields and trackId on the IBAN body', () => {
    const errors = errorsOf(() =>
      validateInquiryBody(IbanRequestDto, { iban: IBAN, nationalCode: NATIONAL_CODE, trackId: 'x' }),
    );
    expect(errors).toEqual([
      { field: 'nationalCode', message: 'is not allowed' },
      { field: 'trackId', message: 'may not be sent; the gateway stamps the trackId' },
    ]);
  });
});

describe('validateInquiryRequest', () => {
  it('returns the normalised body and the key', () => {
    const { body, idempotencyKey } = validateInquiryRequest(
      ShahkarRequestDto,
      { nationalCode: NATIONAL_CODE, mobileNumber: '9121234567' },
      'order-42',
    );
    expect(body).toBeInstanceOf(ShahkarRequestDto);
    expect(body.mobileNumber).toBe(MOBILE);
    expect(idempotencyKey).toBe('order-42');
  });

  it('reports a bad body and a bad key in one answer, one entry per field', () => {
    const problem = problemOf(() => validateInquiryRequest(IbanRequestDto, { iban: 'IR00', extra: 1 }, 'has space'));
    expect(problem.errors?.map((e) => e.field).sort()).toEqual(['Idempotency-Key', 'extra', 'iban']);
  });

  it('keeps the detail of a single failing part', () => {
    expect(problemOf(() => validateInquiryRequest(IbanRequestDto, [], undefined)).detail).toBe(
      'The request body must be a JSON object.',
    );
    expect(problemOf(() => validateInquiryRequest(IbanRequestDto, { iban: IBAN }, '')).errors).toEqual([
      { field: 'Idempotency-Key', message: expect.any(String) },
    ]);
  });
});

describe('validateIdempotencyKey', () => {
  it('returns undefined when the header is absent', () => {
    expect(validateIdempotencyKey(undefined)).toBeUndefined();
  });

  it.each([
    'a',
    'order-42',
    '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
    '!~"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}',
    'x'.repeat(255),
  ])('accepts %s', (key) => {
    expect(validateIdempotencyKey(key)).toBe(key);
  });

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(256)],
    ['a space', 'order 42'],
    ['a tab', 'order\t42'],
    ['a control character', 'order\u000042'],
    ['DEL', 'order\u007f'],
    ['non-ASCII', 'سفارش-۴۲'],
    ['a comma-joined repeat', 'a, b'],
  ])('rejects %s without echoing it', (_label, key) => {
    const problem = problemOf(() => validateIdempotencyKey(key));
    expect(problem.errors).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
    if (key.length > 2) expect(JSON.stringify(problem.toBody())).not.toContain(key);
  });

  it('rejects a repeated header (array)', () => {
    expect(problemOf(() => validateIdempotencyKey(['a', 'b'])).errors).toEqual([
      { field: 'Idempotency-Key', message: 'must be sent at most once' },
    ]);
  });
});

describe('rules compiled once per DTO', () => {
  // The compiled path must answer exactly as plainToInstance + validateSync would.
  const values: unknown[] = [
    undefined,
    null,
    '',
    ' ',
    0,
    1.5,
    true,
    false,
    [],
    ['x'],
    {},
    { a: 1 },
    NATIONAL_CODE,
    ' ۰۴۹۹۳۷۰۸۹۹ ',
    '0499370898',
    MOBILE,
    '+98٩١٢١٢٣٤٥٦٧',
    '9121234567',
    '0912123456',
    IBAN,
    'ir82 0540 1026 8002 0817 9090 02',
    'IR00',
    'standard',
    'advanced',
    'Advanced',
  ];
  const viaLibraries = (dto: new () => object, known: Record<string, unknown>) => {
    const errors = new Map<string, FieldError>();
    const instance = validateWithLibraries(dto, known, errors);
    return errors.size > 0 ? { errors: [...errors.values()] } : { body: { ...instance } };
  };
  const viaGateway = (dto: new () => object, known: Record<string, unknown>) => {
    try {
      return { body: { ...validateInquiryBody(dto, known) } };
    } catch (error) {
      return { errors: (error as ProblemException).errors };
    }
  };
  const cases: [string, new () => object, string[]][] = [
    ['Shahkar', ShahkarRequestDto, ['nationalCode', 'mobileNumber', 'requestHandlingType']],
    ['IBAN', IbanRequestDto, ['iban', 'requestHandlingType']],
  ];

  it.each(cases)('%s: same instance or same errors as class-transformer + class-validator', (_name, dto, fields) => {
    let compared = 0;
    for (const a of values) {
      for (const b of values) {
        for (const c of [undefined, 'standard', 'advanced', 'x', null, 3]) {
          const known: Record<string, unknown> = {};
          const picks = [a, b, c];
          fields.forEach((field, i) => {
            if (picks[i] !== undefined) known[field] = picks[i];
          });
          expect(viaGateway(dto, known)).toEqual(viaLibraries(dto, known));
          compared += 1;
        }
      }
    }
    expect(compared).toBe(values.length * values.length * 6);
  });

  it('returns an instance of the DTO with its defaults', () => {
    const dto = validateInquiryBody(IbanRequestDto, { iban: IBAN });
    expect(dto).toBeInstanceOf(IbanRequestDto);
    expect(dto.requestHandlingType).toBe('standard');
  });
});
