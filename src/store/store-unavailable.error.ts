import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { ProblemException } from '../problem/problem.js';

/**
 * The record store (Redis) could not be reached or did not answer in time. It is the caller's
 * answer as it stands (503 `store_unavailable`, docs/api.md §3): an inquiry whose record cannot
 * be written is refused before anything is sent upstream, so nothing is charged. Code that can
 * do better (owe a settlement, fall back to its own token) catches it by class.
 */
export class StoreUnavailableError extends ProblemException {
  constructor(operation: string, cause?: unknown) {
    super('store_unavailable', 'The record store is unavailable; nothing was sent to the verification service.', {
      headers: { [RETRY_AFTER_HEADER]: '1' },
    });
    // For the logs: which operation failed (the detail above is what callers read).
    this.message = `store unavailable during ${operation}`;
    this.name = 'StoreUnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * Runs a store operation, turning the Redis client's errors into `StoreUnavailableError`: the
 * one translation between Redis and an answer. The gateway's own failures (a value that cannot
 * be serialised or parsed: TypeError, RangeError, SyntaxError) pass unchanged: they are not a
 * store outage, and retrying them, or telling the caller to, cannot help.
 */
export async function storeCall<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) throw error;
    throw new StoreUnavailableError(operation, error);
  }
}
