import type { InquiryPrices } from '../accounting/inquiry-prices.js';
import { recordedPriceOf } from '../config/budget-config.js';
import type { BudgetAction, ReservationRecord, ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import type { InquiryOperation, RequestHandlingType } from '../upstream/inquiry-operation.js';
import { isInt4, upstreamMessageOf, type Charged, type QueuedEntry } from './ledger-entry.js';

/**
 * What the ledger reads of an inquiry record (inquiry/inquiry-record.ts, which sits above
 * this layer and matches this shape).
 */
export interface InquiryFactsInput {
  trackId: string;
  clientId: string;
  subjectSha256?: string;
  operation: InquiryOperation;
  requestHandlingType: RequestHandlingType;
  status: string;
  createdAt: string;
  deadlineAt?: string;
  completedAt?: string;
  upstream?: { code?: number; message?: string };
  data?: unknown;
  charged?: Charged;
  requestId?: string;
  /** The price when the inquiry was made (an entry derived later keeps it, whatever the prices are then). */
  costUnits?: number;
  /** What its budget reservation counted, when one was made: a resolution moves exactly this. */
  reservation?: ReservationRecord;
  /** A reused answer's source, and the units its reuse saved (docs/api.md §6). */
  reusedFrom?: string;
  unitsSaved?: number;
  /**
   * The unit price when the inquiry was made. Never looked up now: a record without one (unset
   * then, or opened before prices were recorded) makes an unpriced entry.
   */
  unitPrice?: string;
  currency?: string;
}

/** One entry read from the queue, with the id that acknowledges it. */
export interface QueueMessage {
  id: string;
  entry: QueuedEntry;
}

/**
 * Past the inquiry's deadline, its `unknown` entry waits this much longer: more than the
 * inquiry's own margin (inquiry-deadline.ts, 2 s), so a settlement written just in time
 * removes the duty first.
 */
export const OVERDUE_MARGIN_MS = 10_000;

/** Without a deadline (records written before deadlines existed): owed after this long. */
const FALLBACK_DEADLINE_MS = 10 * 60_000;

/** What settling does to the inquiry's budget reservation, when it holds one. */
export type { BudgetAction };

/**
 * The durable way from a settled inquiry to PostgreSQL (docs/architecture.md, "The ledger"):
 * a duty written beside the record's create (an `unknown` entry, owed once the deadline has
 * passed), replaced at settlement by the entry itself; entries are read in batches, written
 * to PostgreSQL, and acknowledged. Implementations: Redis (a stream with a consumer group)
 * and in-process memory.
 *
 * The inquiry's budget reservation travels with its duty, and the commit or release with its
 * entry: one atomic operation each (one Redis script in the same write as the record's own
 * command), so an inquiry adds no round trip for either, and a duty exists only for an
 * inquiry its budgets admitted (docs/performance.md, "Ledger" and "Budgets").
 */
export abstract class LedgerQueue {
  /**
   * `keepsData`: false without a key ring, when the ledger keeps no results (sealed or not
   * kept): the upstream data then never rides the queue (test/ledger-queue.integration.spec.ts).
   */
  constructor(
    protected readonly prices: InquiryPrices,
    private readonly keepsData: boolean,
  ) {}

  /**
   * Beside the record's create: the entry owed if the inquiry never settles, and the
   * reservation when a budget applies. Refused by a budget: nothing is written, and the result
   * says which budget; undefined without a reservation.
   */
  abstract owe(record: InquiryFactsInput, reservation?: ReserveRequest): Promise<ReserveResult | undefined>;
  /** After the upstream answer: the entry itself, the duty lifted, the reservation committed or released. */
  abstract settled(record: InquiryFactsInput, budget?: BudgetAction): Promise<void>;
  /** Refused before anything was sent: no entry is owed, and a reservation held is released. */
  abstract discard(trackId: string, releaseReservation: boolean): Promise<void>;
  /** Moves up to `limit` duties past due to the queue (atomically: one replica each); how many. */
  abstract claimOverdue(now: number, limit: number): Promise<number>;
  /** Up to `count` entries to write: this consumer's unacknowledged ones first, then a dead consumer's, then new. */
  abstract read(count: number): Promise<QueueMessage[]>;
  abstract ack(ids: readonly string[]): Promise<void>;
  /** Entries waiting, and the age in seconds of the oldest (0 when none). */
  abstract backlog(now: number): Promise<{ depth: number; oldestAgeSeconds: number }>;

  /** The `unknown` entry owed for a record that never settles, and when it is due (epoch ms). */
  protected dutyOf(record: InquiryFactsInput): { entry: QueuedEntry; dueAt: number } {
    return {
      entry: {
        ...this.common(record),
        kind: 'overdue',
        status: 'unknown',
        charged: 'possibly',
      },
      dueAt: this.dueAtOf(record),
    };
  }

  /** When a record's duty falls due (epoch ms): its deadline and the margin. */
  protected dueAtOf(record: InquiryFactsInput): number {
    const deadline = record.deadlineAt
      ? Date.parse(record.deadlineAt)
      : Date.parse(record.createdAt) + FALLBACK_DEADLINE_MS;
    return deadline + OVERDUE_MARGIN_MS;
  }

  /** The settled entry, with the upstream data (sealed on its way and in PostgreSQL) when the ledger keeps it. */
  protected entryOf(record: InquiryFactsInput): QueuedEntry {
    const status = record.status === 'succeeded' || record.status === 'failed' ? record.status : 'unknown';
    // A failure's message only: a success's is always the same sentence, kept for years per entry.
    const upstreamMessage = status === 'failed' ? upstreamMessageOf(record.upstream?.message) : undefined;
    return {
      ...this.common(record),
      kind: 'settled',
      status,
      charged: record.charged ?? (status === 'succeeded' ? 'yes' : 'possibly'),
      ...(record.completedAt ? { completedAt: record.completedAt } : {}),
      // Only a code PostgreSQL's integer column takes: the upstream's meta.code is any JSON number,
      // and one it cannot store would fail its whole batch for ever.
      ...(isInt4(record.upstream?.code) ? { upstreamCode: record.upstream.code } : {}),
      ...(upstreamMessage !== undefined ? { upstreamMessage } : {}),
      ...(this.keepsData && record.data !== undefined ? { data: record.data } : {}),
    };
  }

  private common(record: InquiryFactsInput) {
    return {
      trackId: record.trackId,
      clientId: record.clientId,
      ...(record.subjectSha256 ? { subjectSha256: record.subjectSha256 } : {}),
      operation: record.operation,
      requestHandlingType: record.requestHandlingType,
      costUnits: record.costUnits ?? this.prices.unitsOf(record.operation, record.requestHandlingType),
      createdAt: record.createdAt,
      ...(record.requestId ? { requestId: record.requestId } : {}),
      ...(record.reservation ? { reservation: record.reservation } : {}),
      ...(record.reusedFrom ? { reusedFrom: record.reusedFrom } : {}),
      ...(isInt4(record.unitsSaved) ? { unitsSaved: record.unitsSaved } : {}),
      ...recordedPriceOf(record),
    };
  }
}
