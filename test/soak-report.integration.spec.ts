/**
 * The soak's report (bench/soak/report.ts, docs/soak.md "The report") and its reuse rule
 * (bench/soak/books.ts) on a small synthetic run. Pure logic, no servers: in the integration tier
 * beside test/soak-books.integration.spec.ts, the unit tier being src/ only (jest.config.js).
 */
import { describe, expect, it } from '@jest/globals';
import { checkBooks, REUSE_RULE, type BookEntry } from '../bench/soak/books.js';
import type { ClientAttempt } from '../bench/soak/explain.js';
import { buildReport, countedFaultEnd, formatReport, money, rssOf, type ReportRun } from '../bench/soak/report.js';

const T = 1_000_000; // the run's start, ms
const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const R = 'cccccccc-0000-4000-8000-000000000003';
const J = 'dddddddd-0000-4000-8000-000000000004';
const E = 'eeeeeeee-0000-4000-8000-000000000005';
const iso = (ms: number) => new Date(ms).toISOString();
const entry = (trackId: string, extra: Partial<BookEntry> = {}): BookEntry => ({
  trackId,
  kind: 'settled',
  clientId: 'svc',
  charged: 'yes',
  costUnits: 1,
  createdAt: iso(T + 1_000),
  ...extra,
});
let n = 0;
/** An attempt sent at `sent` s, answered 100 ms later (or `latency` ms). */
const attempt = (sent: number, outcome: string, extra: Partial<ClientAttempt> = {}, latency = 100): ClientAttempt => ({
  kind: 'login',
  replica: 0,
  requestId: `soak-${n++}-0`,
  sentAt: T + sent * 1000,
  answeredAt: T + sent * 1000 + latency,
  outcome,
  ...extra,
});

const run: ReportRun = {
  minutes: 1,
  seed: 46,
  started: T,
  ended: T + 60_000,
  faults: [
    { name: 'replica killed', from: T + 10_000, to: T + 12_000 },
    { name: 'upstream failing', from: T + 30_000, to: T + 40_000 },
  ],
  attempts: [
    attempt(1, '200', { trackId: A }, 10),
    attempt(2, '200', { trackId: B, cacheStatus: 'verification-gateway; fwd=miss' }, 20),
    attempt(3, '200', { trackId: R, cacheStatus: 'verification-gateway; hit' }, 30),
    attempt(12.1, '200', { trackId: R }, 0), // a reused answer: not the healing
    attempt(9.9, 'connection', {}, 200), // in flight when the replica was killed
    attempt(12.5, '200', { trackId: E }, 100), // the first fresh 200 sent after the kill's end: healed 0.6 s after
    attempt(16, '503', {}, 10), // within the 5 s grace after the kill
    attempt(20, '503', {}, 10), // explained by nothing
    attempt(31, '502', {}, 1_000),
    attempt(41, '200', { trackId: J, cacheStatus: 'verification-gateway; fwd=miss; collapsed' }, 50),
  ],
  upstreamCalls: [
    { at: T + 1_000, trackId: A },
    { at: T + 2_000, trackId: B },
    { at: T + 31_000, trackId: '99999999-0000-4000-8000-000000000009' },
  ],
  charges: { [A]: 1, [B]: 1 },
  entries: [
    entry(A, { costUnits: 3 }),
    entry(B),
    entry(R, { costUnits: 0, reusedFrom: A, unitsSaved: 3, createdAt: iso(T + 3_000) }),
    entry(J, { costUnits: 0, reusedFrom: B, unitsSaved: 1, createdAt: iso(T + 41_000) }),
  ],
  unitPrice: { amount: '2500.5', currency: 'IRR' },
  rss: [{ replica: 0, startBytes: 100 * 2 ** 20, endBytes: 150 * 2 ** 20 }],
};

describe('the soak report', () => {
  const report = buildReport(run);

  it('attributes each failure to the fault it overlaps (with the grace after it), and lists those no fault explains', () => {
    expect(report.faults.map((f) => f.failures)).toEqual([{ connection: 1, '503': 1 }, { '502': 1 }]);
    expect(report.faults[0]).toMatchObject({ from: 10, to: 12, firstOkAfter: 0.6, lastFailureAfter: 4.01 });
    expect(report.unexplained.map((a) => a.outcome)).toEqual(['503']);
    expect(report.imbalances).toHaveLength(1);
    expect(report.imbalances[0].detail).toContain('503 at 20.0 s');
  });

  it('gives latency per phase, calm before the first fault', () => {
    expect(report.phases.map((p) => [p.name, p.answers, p.failures, p.p50, p.p99])).toEqual([
      ['calm', 4, 1, 20, 200],
      ['replica killed', 4, 2, 10, 100],
      ['upstream failing', 2, 1, 50, 1_000],
    ]);
  });

  it('counts what reuse and coalescing saved, in units and exact money, with the share of paid traffic', () => {
    expect(report.saving).toMatchObject({
      callsSaved: 2,
      hits: 1,
      collapsed: 1,
      unitsSaved: 4,
      unitsPaid: 4,
      share: 0.5,
      money: { saved: '10,002', paid: '10,002', currency: 'IRR' },
    });
    expect(money('0.75', 3)).toBe('2.25');
    expect(rssOf('# TYPE x gauge\nprocess_resident_memory_bytes 104857600\n')).toBe(104_857_600);
    expect(formatReport(report).join('\n')).toContain('replica 0: start 100.0 MiB, end 150.0 MiB');
  });
});

describe('countedFaultEnd', () => {
  it('lasts a fault of the next calls until the first inquiry call after its last was taken, at least its window', () => {
    const calls = [{ at: 35 }, { at: 58 }];
    expect(countedFaultEnd(36, 49, calls, 60)).toBe(58);
    expect(countedFaultEnd(36, 30, calls, 60)).toBe(36);
    expect(countedFaultEnd(36, 59, calls, 60)).toBe(60);
    expect(countedFaultEnd(36, undefined, calls, 60)).toBe(60);
  });
});

describe('the reuse rule of the books', () => {
  const books = (chargedAt: Map<string, number>) =>
    checkBooks({
      charges: new Map([[A, 1]]),
      chargedAt,
      entries: [entry(A), entry(R, { costUnits: 0, reusedFrom: A, createdAt: iso(T + 3_000) })],
      budgets: [],
      budgetsCountFrom: iso(T),
    });

  it('holds when the source was charged before the reuse, and names the reuse otherwise', () => {
    expect(books(new Map([[A, T + 1_000]])).imbalances).toEqual([]);
    expect(books(new Map([[A, T + 5_000]])).imbalances).toEqual([{ rule: REUSE_RULE, trackIds: [R] }]);
    const neverCharged = checkBooks({
      charges: new Map(),
      entries: [entry(R, { charged: 'no', costUnits: 0, reusedFrom: A })],
      budgets: [],
      budgetsCountFrom: iso(T),
    });
    expect(neverCharged.imbalances).toEqual([{ rule: REUSE_RULE, trackIds: [R] }]);
  });
});
