/**
 * InquiryOpening's own rules, with its books faked (inquiry-books.spec.ts proves those): the
 * record it writes, and what a refusal or a failure answers and leaves owed.
 */
import { describe, expect, it } from '@jest/globals';
import type { Caller } from '../caller-auth/caller.js';
import { BudgetCalendar } from '../budget/budget-windows.js';
import type { ReserveRequest, ReserveResult } from '../budget/budget.store.js';
import { SubjectHasher } from '../crypto/subject-hash.js';
import { ProblemException } from '../problem/problem.js';
import { StoreUnavailableError } from '../store/store-unavailable.error.js';
import { stamp } from './inquiry-in-flight.js';
import { InquiryOpening } from './inquiry-opening.js';
import type { InquiryRecord } from './inquiry-record.js';

const config = {
  get: (name: string) => (name === 'idempotency' ? { ttlSeconds: 60 } : { timeoutMs: 1_000, advancedTimeoutMs: 3_000 }),
} as never;
const now = Date.now();
const RESERVATION: ReserveRequest = {
  trackId: 't',
  units: 3,
  now,
  concludeAt: now + 60_000,
  windows: new BudgetCalendar('UTC', 'gregory').windowsAt(now),
  budgets: [{ name: 'svc-a', daily: 5, monthly: -1 }],
};
const REFUSAL = new ProblemException('budget_exhausted', 'spent');

function opening(books: { open: () => Promise<ReserveResult | undefined> }, reservation?: ReserveRequest) {
  const owed: string[] = [];
  const budgets = { reservationFor: () => reservation, refusal: () => REFUSAL };
  const undo = (_: string, failed: boolean) => (failed ? () => Promise.resolve() : undefined);
  const settlements = { write: (what: string) => (owed.push(what), Promise.resolve()) };
  const prices = { unitsOf: () => 1 };
  const step = new InquiryOpening(
    config,
    budgets as never,
    prices as never,
    { ...books, undo } as never,
    settlements as never,
    new SubjectHasher([]),
  );
  return { step, owed };
}

const inquiry = () =>
  stamp(
    { clientId: 'svc-a', subject: 'user-1' } as Caller,
    { operation: 'iban', route: '/v1/kyc/iban', requestHandlingType: 'advanced', fields: {} },
    undefined,
    { requestId: 'r-1' },
    undefined,
  );

describe('InquiryOpening', () => {
  it('writes the record pending, priced, with its deadline, the end user pseudonymous', async () => {
    let written: InquiryRecord | undefined;
    const { step } = opening({
      open: (record?: InquiryRecord) => ((written = record), Promise.resolve(undefined)),
    });
    const open = await step.open(inquiry());
    expect(open.record).toBe(written);
    expect(written).toMatchObject({ status: 'pending', costUnits: 1, requestId: 'r-1', clientId: 'svc-a' });
    expect(written?.subjectSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(written?.reservation).toBeUndefined();
    expect(Date.parse(written!.deadlineAt!)).toBe(open.callBudget.deadline);
  });

  it('a refused reservation answers 429 without a trackId, with nothing to undo in the books', async () => {
    const refused = { admitted: false, window: 'daily', budget: 'svc-a', remaining: 0, first: true } as const;
    const { step, owed } = opening({ open: () => Promise.resolve(refused) }, RESERVATION);
    await expect(step.open(inquiry())).rejects.toBe(REFUSAL);
    expect(REFUSAL.trackId).toBeUndefined();
    expect(owed).toEqual([]);
  });

  it('a store failure answers 503 naming the trackId, and owes the discard of what may have landed', async () => {
    const failure = new StoreUnavailableError('inquiry create');
    const { step, owed } = opening({ open: () => Promise.reject(failure) }, RESERVATION);
    const stamped = inquiry();
    await expect(step.open(stamped)).rejects.toBe(failure);
    expect(failure.trackId).toBe(stamped.trackId);
    expect(owed).toEqual([`discard of ${stamped.trackId}`]);
  });
});
