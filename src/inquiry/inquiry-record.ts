import type { ReservationRecord } from '../budget/budget.store.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';
import { statusNow } from './inquiry-deadline.js';

export {
  REQUEST_HANDLING_TYPES,
  type InquiryOperation,
  type RequestHandlingType,
} from '../upstream/inquiry-operation.js';

export type InquiryStatus = 'pending' | 'succeeded' | 'failed' | 'unknown';

/**
 * One inquiry, written before the upstream call and settled after it (docs/upstream-api.md
 * §4.4: the trackId is the billing and support reference). The request's personal data is
 * not kept: only a fingerprint of it, for idempotency.
 */
export interface InquiryRecord {
  trackId: string;
  clientId: string;
  /** SHA-256 of the end user (JWT `sub`), when an app called for one: only that user reads it. */
  subjectSha256?: string;
  operation: InquiryOperation;
  requestHandlingType: RequestHandlingType;
  fingerprint: string;
  status: InquiryStatus;
  createdAt: string;
  /**
   * When the upstream work is over by construction (inquiry-deadline.ts): a record still
   * `pending` after it (and a margin) reads `unknown`.
   */
  deadlineAt?: string;
  /**
   * A waiter's record while it waits for an identical inquiry in flight (docs/api.md §2,
   * "Joins"): nothing was sent under this trackId. Gone once it settles or goes on alone.
   */
  joined?: true;
  completedAt?: string;
  upstream?: { code?: number; message?: string };
  data?: unknown;
  /** For the ledger (docs/api.md §6): whether the upstream charged, once settled. */
  charged?: 'yes' | 'no' | 'possibly';
  /** For the ledger: the request that made the inquiry. */
  requestId?: string;
  /** For the ledger: the inquiry's price in cost units when it was made (INQUIRY_PRICES). */
  costUnits?: number;
  /** For the ledger: what the budget reservation counted, so a resolution gives back exactly that. */
  reservation?: ReservationRecord;
  /** The trackId of the answer reused for this inquiry (docs/api.md §2, "Reusing answers"); the ledger keeps it always. */
  reusedFrom?: string;
  /** An unknown resolved since (docs/api.md §8): the ledger's resolution, read over the record. */
  resolvedBy?: 'reconciliation' | 'tracking';
  /** Under `company`, an answer another client paid for: `reusedFrom` is then left out of what this caller reads. */
  reusedFromHidden?: boolean;
  /** For the ledger: what a reused inquiry would have cost at its own type and price then (its costUnits are 0). */
  unitsSaved?: number;
  /**
   * For the ledger: what one unit cost when the inquiry was made (COST_UNIT_PRICE then), read
   * back for its money ever after; absent when it was unset (InquiryPrices.recordedPrice).
   */
  unitPrice?: string;
  currency?: string;
}

/** What `GET /v1/inquiries/{trackId}` shows (docs/api.md §2), as of now. */
export function publicView(record: InquiryRecord) {
  return {
    trackId: record.trackId,
    operation: record.operation,
    status: statusNow(record),
    requestHandlingType: record.requestHandlingType,
    createdAt: record.createdAt,
    ...(record.completedAt ? { completedAt: record.completedAt } : {}),
    ...(record.upstream ? { upstream: record.upstream } : {}),
    ...(record.data !== undefined ? { data: record.data } : {}),
    ...(record.reusedFrom !== undefined && !record.reusedFromHidden ? { reusedFrom: record.reusedFrom } : {}),
    ...(record.resolvedBy !== undefined ? { resolvedBy: record.resolvedBy } : {}),
  };
}

/** A response as sent, kept so an idempotent retry gets exactly the same one back. */
export interface StoredResponse {
  status: number;
  contentType: string;
  body: unknown;
  trackId: string;
  /** Further headers, e.g. `Retry-After`. */
  headers?: Record<string, string>;
}

export interface IdempotencyClaim {
  trackId: string;
  fingerprint: string;
  state: 'in_flight' | 'done';
  /** Epoch ms of the claim: an in-flight claim older than the lease belongs to a dead request. */
  claimedAt?: number;
  response?: StoredResponse;
}

/**
 * Epoch ms at which the record written with `ttlSeconds` expires: a write about it owed past
 * this no longer matters (Settlements).
 */
export function recordExpiry(record: InquiryRecord, ttlSeconds: number): number {
  return Date.parse(record.createdAt) + ttlSeconds * 1000;
}
