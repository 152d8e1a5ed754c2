/**
 * The two ways an inquiry's record, ledger duty and budget reservation are written
 * (InquiryBooks), against the in-process stores: what a refused or failed opening leaves, and
 * what its undo takes away. The script of standalone Redis is proven in
 * test/ledger-queue.integration.spec.ts.
 */
import { describe, expect, it, jest } from '@jest/globals';
import { InquiryPrices } from '../accounting/inquiry-prices.js';
import { BudgetCalendar } from '../budget/budget-windows.js';
import { MemoryBudgetStore, type ReserveRequest } from '../budget/budget.store.js';
import { DEFAULT_INQUIRY_PRICES } from '../config/budget-config.js';
import { MemoryLedgerQueue } from '../ledger/memory-ledger.queue.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import { BooksBesideRecord, BooksInRecordScript } from './inquiry-books.js';
import type { InquiryRecord } from './inquiry-record.js';
import { MemoryInquiryStore } from './memory-inquiry.store.js';
import { pendingRecord } from '../../test/support/inquiry-records.js';

const now = Date.now();
const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);

const pending = (): InquiryRecord =>
  pendingRecord({ createdAt: new Date(now).toISOString(), deadlineAt: new Date(now + 60_000).toISOString() });

function reservation(trackId: string, units: number): ReserveRequest {
  return {
    trackId,
    units,
    now,
    concludeAt: now + 60_000,
    windows,
    budgets: [{ name: 'svc-a', daily: 5, monthly: -1 }],
  };
}

function beside() {
  const records = new MemoryInquiryStore();
  const budgets = new MemoryBudgetStore();
  const ledger = new MemoryLedgerQueue(new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never), budgets);
  const reserved = async () => (await budgets.read(windows, ['svc-a'], now)).get('svc-a|daily');
  return { records, ledger, reserved, books: new BooksBesideRecord(records, ledger) };
}

describe('BooksBesideRecord', () => {
  it('a refused reservation writes no duty, and its undo deletes the record written beside it', async () => {
    const { records, ledger, books } = beside();
    const record = pending();
    expect(await books.open(record, 60, reservation(record.trackId, 6))).toMatchObject({ admitted: false });
    expect(await records.get(record.trackId)).not.toBeNull();
    await books.undo(record.trackId, false, true)!();
    expect(await records.get(record.trackId)).toBeNull();
    expect(await ledger.claimOverdue(now + 3_600_000, 10)).toBe(0);
  });

  it('a failed record write fails the opening, and its undo takes back the duty and the reservation', async () => {
    const { records, ledger, reserved, books } = beside();
    jest.spyOn(records, 'create').mockRejectedValueOnce(new StoreUnavailableError('inquiry create'));
    const record = pending();
    await expect(books.open(record, 60, reservation(record.trackId, 2))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await reserved()).toEqual({ spent: 0, reserved: 2 });
    await books.undo(record.trackId, true, true)!();
    expect(await reserved()).toEqual({ spent: 0, reserved: 0 });
    expect(await ledger.claimOverdue(now + 3_600_000, 10)).toBe(0);
  });

  it('settles the record, its entry and the budget move together', async () => {
    const { records, ledger, reserved, books } = beside();
    const record = pending();
    await books.open(record, 60, reservation(record.trackId, 2));
    await books.settle({ ...record, status: 'succeeded', completedAt: new Date().toISOString() }, 60, 'commit');
    expect((await records.get(record.trackId))?.status).toBe('succeeded');
    expect(await reserved()).toEqual({ spent: 2, reserved: 0 });
    expect(await ledger.read(10)).toEqual([
      expect.objectContaining({ entry: expect.objectContaining({ kind: 'settled', trackId: record.trackId }) }),
    ]);
  });
});

describe('BooksInRecordScript', () => {
  it('has nothing to undo after a refusal (the script wrote nothing), and everything after a failure', async () => {
    const { records, ledger } = beside();
    const discarded = jest.spyOn(records, 'discard');
    const released = jest.spyOn(ledger, 'discard');
    const books = new BooksInRecordScript(records, ledger);
    expect(books.undo('t', false, true)).toBeUndefined();
    await books.undo('t', true, true)!();
    expect(discarded).toHaveBeenCalledWith('t');
    expect(released).toHaveBeenCalledWith('t', true);
  });
});
