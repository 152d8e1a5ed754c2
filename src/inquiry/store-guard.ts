import { Logger } from '@nestjs/common';
import { ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import { RETRY_AFTER_HEADER } from '../http/headers.js';

const logger = new Logger('InquiryStore');

/**
 * Runs a record or claim store operation that must succeed before anything is sent upstream:
 * a store failure becomes 503 `store_unavailable` (docs/api.md §3), nothing is charged.
 */
export async function guardStore<T>(operation: () => Promise<T>, trackId?: string): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof StoreUnavailableError) {
      logger.error(`record store unavailable: ${error.message}`);
      throw new ProblemException(
        'store_unavailable',
        'The record store is unavailable; nothing was sent to the verification service.',
        { trackId, headers: { [RETRY_AFTER_HEADER]: '1' } },
      );
    }
    throw error;
  }
}
