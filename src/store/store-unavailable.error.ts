/** The record store (Redis) could not be reached or did not answer in time. */
export class StoreUnavailableError extends Error {
  constructor(operation: string, cause?: unknown) {
    super(`store unavailable during ${operation}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Runs a store operation, turning the Redis client's errors into `StoreUnavailableError`.
 * The gateway's own failures (a value that cannot be serialised or parsed: TypeError,
 * RangeError, SyntaxError) pass unchanged: they are not a store outage, and retrying them,
 * or telling the caller to, cannot help.
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
