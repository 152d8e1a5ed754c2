/**
 * InquirySettlement's own rules, with its books and stores faked: what the settled record says
 * was charged, which budget move goes with it, and what becomes of the key.
 */
import { describe, expect, it } from '@jest/globals';
import type { BudgetAction } from '../ledger/ledger-queue.js';
import type { ReuseSettlement } from './answer-keeping.js';
import type { HeldKey } from './idempotency.service.js';
import type { OpenInquiry } from './inquiry-in-flight.js';
import type { InquiryOutcome } from './inquiry-outcome.js';
import type { InquiryRecord } from './inquiry-record.js';
import { InquirySettlement } from './inquiry-settlement.js';
import { pendingRecord } from '../../test/support/inquiry-records.js';

const RECORD = pendingRecord({ trackId: '00000000-0000-4000-8000-000000000001', costUnits: 1 });

function outcome(status: InquiryOutcome['status'], notCharged = false): InquiryOutcome {
  return { status, notCharged, record: {}, response: { status: 200, contentType: 'application/json', body: {} } };
}

async function settle(out: InquiryOutcome, reserved: boolean, reuse?: ReuseSettlement) {
  const writes: { record?: InquiryRecord; budget?: BudgetAction; key?: string } = {};
  const books = {
    settle: (record: InquiryRecord, _ttl: number, budget?: BudgetAction) => {
      Object.assign(writes, { record, budget });
      return Promise.resolve();
    },
  };
  const idempotency = {
    complete: () => ((writes.key = 'completed'), Promise.resolve()),
    release: () => ((writes.key = 'released'), Promise.resolve()),
  };
  const settlements = { write: (_what: string, write: () => Promise<void>) => write() };
  const step = new InquirySettlement(
    { get: () => ({ ttlSeconds: 60 }) } as never,
    books as never,
    settlements as never,
    { announce: () => Promise.resolve() } as never,
    idempotency as never,
  );
  const record = reserved ? { ...RECORD, reservation: {} as InquiryRecord['reservation'] } : RECORD;
  const answer = await step.settle({ record, trackId: RECORD.trackId, key: {} as HeldKey } as OpenInquiry, out, reuse);
  return { answer, ...writes };
}

describe('InquirySettlement', () => {
  it.each([
    ['succeeded', false, 'yes', 'commit', 'completed'],
    ['failed', false, 'no', 'release', 'completed'],
    ['unknown', false, 'possibly', 'unknown', 'completed'],
    ['unknown', true, 'no', 'release', 'released'],
  ] as Array<[InquiryOutcome['status'], boolean, string, BudgetAction, string]>)(
    '%s (not charged: %s): charged %s, budget %s, key %s',
    async (status, notCharged, charged, budget, key) => {
      const settled = await settle(outcome(status, notCharged), true);
      expect(settled.record).toMatchObject({ status, charged });
      expect(settled.budget).toBe(budget);
      expect(settled.key).toBe(key);
      expect(settled.answer).toMatchObject({ trackId: RECORD.trackId, replayed: false });
    },
  );

  it('keeps a stale answer served in place of a refusal that charged nothing under its key', async () => {
    const stale = { status: 200, contentType: 'application/json', body: { stale: true } };
    const settled = await settle(outcome('unknown', true), true, { response: stale });
    expect(settled.key).toBe('completed');
    expect(settled.answer).toMatchObject({ body: { stale: true }, trackId: RECORD.trackId });
  });

  it('moves no budget when nothing was reserved', async () => {
    expect((await settle(outcome('succeeded'), false)).budget).toBeUndefined();
  });
});
