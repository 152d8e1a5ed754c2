import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { getMetadataStorage, validateSync, type ValidationError } from 'class-validator';
import { ProblemException, type FieldError } from '../../problem/problem.js';
import { MESSAGES } from './decorators.js';

const BODY_FIELD = 'body';
const TRACK_ID_FIELD = 'trackId';

/** The properties a DTO declares: exactly those that carry a class-validator constraint. */
const declaredFieldsByDto = new WeakMap<ClassConstructor<object>, Set<string>>();
function declaredFields(dto: ClassConstructor<object>): Set<string> {
  // Decorator metadata is fixed once the class is loaded: read it once, not per request.
  let fields = declaredFieldsByDto.get(dto);
  if (!fields) {
    fields = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(dto, '', true, false)
        .map((m) => m.propertyName),
    );
    declaredFieldsByDto.set(dto, fields);
  }
  return fields;
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** One message per property: each field carries a single constraint, and validation stops at the first failure. */
function toFieldError(error: ValidationError): FieldError {
  const messages = Object.values(error.constraints ?? {});
  return { field: error.property, message: messages[0] ?? 'is invalid' };
}

/**
 * Validates a parsed JSON body against an inquiry DTO and returns a DTO instance holding the
 * normalised values, or throws `ProblemException.validation` with exactly one entry per bad
 * field (field = property name, or `body` when the body is not a JSON object).
 *
 * - Unknown fields are rejected one by one (`trackId` with its own message).
 * - Types are strict: no implicit conversion (a number is not a string).
 * - Messages never contain the submitted value.
 */
export function validateInquiryBody<T extends object>(dto: ClassConstructor<T>, body: unknown): T {
  if (!isJsonObject(body)) {
    throw ProblemException.validation(
      [{ field: BODY_FIELD, message: 'must be a JSON object' }],
      'The request body must be a JSON object.',
    );
  }

  const allowed = declaredFields(dto);
  const errors = new Map<string, FieldError>();
  const known: Record<string, unknown> = {};

  for (const key of Object.keys(body)) {
    if (allowed.has(key)) {
      known[key] = body[key];
    } else {
      errors.set(key, { field: key, message: key === TRACK_ID_FIELD ? MESSAGES.trackId : MESSAGES.unknownField });
    }
  }

  // Only declared fields reach class-transformer; no implicit conversion, so types stay as sent.
  const instance = plainToInstance(dto, known, { enableImplicitConversion: false });
  const failures = validateSync(instance, {
    stopAtFirstError: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  for (const failure of failures) {
    if (!errors.has(failure.property)) errors.set(failure.property, toFieldError(failure));
  }

  if (errors.size > 0) throw ProblemException.validation([...errors.values()]);
  return instance;
}

const IDEMPOTENCY_KEY_FIELD = 'Idempotency-Key';
/** 1–255 visible ASCII characters (0x21–0x7E): no spaces, no control or non-ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

/**
 * Checks the `Idempotency-Key` header. Absent → `undefined`; valid → the key; otherwise
 * throws `validation_failed` with one `Idempotency-Key` entry (never echoing the key).
 * A repeated header (array, or Node's comma-joined form, which contains a space) is refused.
 */
export function validateIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    throw ProblemException.validation([{ field: IDEMPOTENCY_KEY_FIELD, message: 'must be sent at most once' }]);
  }
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY.test(value)) {
    throw ProblemException.validation([
      { field: IDEMPOTENCY_KEY_FIELD, message: 'must be 1 to 255 visible ASCII characters (0x21-0x7E)' },
    ]);
  }
  return value;
}

/**
 * The whole inquiry request: body and `Idempotency-Key` checked together, so that one
 * answer lists every bad field, the header included (internal-api.md §3). Returns the
 * normalised DTO and the key.
 */
export function validateInquiryRequest<T extends object>(
  dto: ClassConstructor<T>,
  body: unknown,
  idempotencyKey: string | string[] | undefined,
): { body: T; idempotencyKey: string | undefined } {
  const problems: ProblemException[] = [];
  const collect = <R>(check: () => R): R | undefined => {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof ProblemException) || error.code !== 'validation_failed') throw error;
      problems.push(error);
      return undefined;
    }
  };
  const validBody = collect(() => validateInquiryBody(dto, body));
  const key = collect(() => validateIdempotencyKey(idempotencyKey));
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw ProblemException.validation(problems.flatMap((p) => p.errors ?? []));
  return { body: validBody as T, idempotencyKey: key };
}
