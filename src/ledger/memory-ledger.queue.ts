import type { InquiryPrices } from '../accounting/inquiry-prices.js';
import type { BudgetStore, ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import type { QueuedEntry } from './ledger-entry.js';
import { LedgerQueue, type BudgetAction, type InquiryFactsInput, type QueueMessage } from './ledger-queue.js';

/**
 * The queue in the process (REDIS_URL unset: one replica, docs/decisions/0005): the same
 * duties, entries and acknowledgements, lost with the process like the records themselves.
 */
export class MemoryLedgerQueue extends LedgerQueue {
  private readonly duties = new Map<string, { entry: QueuedEntry; dueAt: number }>();
  private readonly entries = new Map<string, { entry: QueuedEntry; at: number }>();
  private next = 0;

  /**
   * `budgets`: the in-process budget store (each of its operations completes at once, so each
   * step here is atomic); `keepsData`: false without a key ring (LedgerQueue).
   */
  constructor(
    prices: InquiryPrices,
    private readonly budgets: BudgetStore,
    keepsData = true,
  ) {
    super(prices, keepsData);
  }

  async owe(record: InquiryFactsInput, reservation?: ReserveRequest): Promise<ReserveResult | undefined> {
    const admitted = reservation ? await this.budgets.reserve(reservation) : undefined;
    if (admitted?.admitted !== false) this.duties.set(record.trackId, this.dutyOf(record));
    return admitted;
  }

  async settled(record: InquiryFactsInput, budget?: BudgetAction): Promise<void> {
    this.duties.delete(record.trackId);
    this.push(this.entryOf(record));
    if (budget) await this.budgets.settle(record.trackId, budget, Date.now());
  }

  async discard(trackId: string, releaseReservation: boolean): Promise<void> {
    this.duties.delete(trackId);
    if (releaseReservation) await this.budgets.settle(trackId, 'release', Date.now());
  }

  claimOverdue(now: number, limit: number): Promise<number> {
    let moved = 0;
    for (const [trackId, duty] of this.duties) {
      if (moved >= limit) break;
      if (duty.dueAt > now) continue;
      this.duties.delete(trackId);
      this.push(duty.entry);
      moved += 1;
    }
    return Promise.resolve(moved);
  }

  read(count: number): Promise<QueueMessage[]> {
    const batch: QueueMessage[] = [];
    // Entries of a batch that failed to be written are read again (one consumer: this process).
    for (const [id, held] of this.entries) {
      if (batch.length >= count) break;
      batch.push({ id, entry: held.entry });
    }
    return Promise.resolve(batch);
  }

  ack(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.entries.delete(id);
    return Promise.resolve();
  }

  backlog(now: number): Promise<{ depth: number; oldestAgeSeconds: number }> {
    const oldest = this.entries.values().next().value;
    return Promise.resolve({
      depth: this.entries.size,
      oldestAgeSeconds: oldest ? Math.max(0, (now - oldest.at) / 1000) : 0,
    });
  }

  private push(entry: QueuedEntry): void {
    this.next += 1;
    this.entries.set(String(this.next), { entry, at: Date.now() });
  }
}
