/** The record store (Redis) could not be reached or did not answer in time. */
export class StoreUnavailableError extends Error {
  constructor(operation: string, cause?: unknown) {
    super(`store unavailable during ${operation}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

/** Runs a store operation, turning any client error into `StoreUnavailableError`. */
export async function storeCall<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError(operation, error);
  }
}
