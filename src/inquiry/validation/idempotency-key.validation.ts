import { ProblemException } from '../../problem/problem.js';

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
 * A body's check and the `Idempotency-Key`'s together: one answer lists every bad field, the
 * header included; the built-ins' DTOs and the catalog's operations alike.
 */
export function withIdempotencyKey<T>(
  checkBody: () => T,
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
  const validBody = collect(checkBody);
  const key = collect(() => validateIdempotencyKey(idempotencyKey));
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw ProblemException.validation(problems.flatMap((p) => p.errors ?? []));
  return { body: validBody as T, idempotencyKey: key };
}
