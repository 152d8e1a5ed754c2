import { describe, expect, it } from '@jest/globals';
import { longestDeadlineMs } from '../config/inquiry-lifetimes.js';
import { DEADLINE_MARGIN_MS, inquiryBudget, msUntilOverdue, statusNow } from './inquiry-deadline.js';

const UPSTREAM = { timeoutMs: 1_000, advancedTimeoutMs: 5_000 };

describe('inquiry deadlines', () => {
  it('budgets each handling type its own call timeout, twice (the call and its repeat after a 401), plus the token wait', () => {
    expect(inquiryBudget(UPSTREAM, 'standard', 100)).toEqual({ callTimeoutMs: 1_000, deadline: 100 + 2_000 + 6_000 });
    expect(inquiryBudget(UPSTREAM, 'advanced', 100)).toEqual({ callTimeoutMs: 5_000, deadline: 100 + 10_000 + 6_000 });
  });

  it('the configuration check uses the same longest deadline (IDEMPOTENCY_TTL_SECONDS lower bound)', () => {
    expect(longestDeadlineMs(UPSTREAM)).toBe(inquiryBudget(UPSTREAM, 'advanced', 0).deadline + DEADLINE_MARGIN_MS);
  });

  it('clock skew between replicas: tolerated up to the margin, beyond it a live record reads unknown (a documented limit)', () => {
    // The writer's clock sets deadlineAt; a reader whose clock runs `skew` ahead sees "now" that
    // much later. Nothing of the inquiry runs past its deadline (AuthorizedUpstream), so a
    // reader within the margin never reads a live inquiry as unknown...
    const deadline = Date.parse('2026-11-24T10:00:00Z');
    const pending = { status: 'pending', deadlineAt: new Date(deadline).toISOString() };
    const liveUntil = deadline; // the writer's last possible moment of work
    expect(statusNow(pending, liveUntil + DEADLINE_MARGIN_MS)).toBe('pending');
    // ...but one more than the margin ahead concludes it while the call may still be answered.
    const skew = DEADLINE_MARGIN_MS + 1_000;
    expect(statusNow(pending, liveUntil - 500 + skew)).toBe('unknown');
  });

  const record = (status: string, deadlineAt?: number) => ({
    status,
    ...(deadlineAt !== undefined ? { deadlineAt: new Date(deadlineAt).toISOString() } : {}),
  });

  it('a pending record reads unknown only once its deadline and the margin have passed', () => {
    const deadline = Date.parse('2026-11-24T10:00:00Z');
    expect(statusNow(record('pending', deadline), deadline + DEADLINE_MARGIN_MS)).toBe('pending');
    expect(statusNow(record('pending', deadline), deadline + DEADLINE_MARGIN_MS + 1)).toBe('unknown');
    expect(msUntilOverdue(record('pending', deadline), deadline)).toBe(DEADLINE_MARGIN_MS + 1);
    // Waited exactly that long, the record reads unknown.
    const at = deadline + msUntilOverdue(record('pending', deadline), deadline);
    expect(statusNow(record('pending', deadline), at)).toBe('unknown');
    expect(msUntilOverdue(record('pending', deadline), at)).toBe(0);
    expect(msUntilOverdue(record('pending', deadline), deadline + 10 * DEADLINE_MARGIN_MS)).toBe(0);
  });

  it('settled records, and records written before deadlines existed, read as stored', () => {
    const past = Date.parse('2020-01-01T00:00:00Z');
    for (const status of ['succeeded', 'failed', 'unknown']) expect(statusNow(record(status, past))).toBe(status);
    expect(statusNow(record('pending'))).toBe('pending');
    expect(msUntilOverdue(record('pending'))).toBe(Infinity);
  });

  it("a waiter's record (joined, nothing sent) past its deadline reads failed, never unknown (possibly charged)", () => {
    // Its replica died while it waited: no call was made under its trackId.
    const deadline = Date.parse('2026-11-24T10:00:00Z');
    const joined = { ...record('pending', deadline), joined: true as const };
    expect(statusNow(joined, deadline + DEADLINE_MARGIN_MS)).toBe('pending');
    expect(statusNow(joined, deadline + DEADLINE_MARGIN_MS + 1)).toBe('failed');
  });
});
