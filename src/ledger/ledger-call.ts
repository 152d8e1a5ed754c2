import { ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';

/**
 * Runs a read of the ledger for an answer: PostgreSQL unreachable (or failing) is the caller's
 * 503 `store_unavailable` (docs/api.md §3), a problem the code raised passes as it is, and the
 * gateway's own bugs (TypeError and kin) stay what they are, as storeCall does for Redis.
 */
export async function ledgerCall<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ProblemException) throw error;
    if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) throw error;
    throw new StoreUnavailableError(operation, error);
  }
}
