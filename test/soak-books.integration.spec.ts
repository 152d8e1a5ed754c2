/**
 * The soak's books check (bench/soak/books.ts, docs/soak.md) on synthetic lists: each rule named
 * when its imbalance is there, and nothing when the books balance; an imbalanced trackId explained
 * (bench/soak/explain.ts). Pure logic, no servers.
 */
import { describe, expect, it } from '@jest/globals';
import { checkBooks, type BookEntry } from '../bench/soak/books.js';
import { explain } from '../bench/soak/explain.js';

const A = 'aaaaaaaa-0000-4000-8000-000000000001';
const B = 'bbbbbbbb-0000-4000-8000-000000000002';
const C = 'cccccccc-0000-4000-8000-000000000003';
const T0 = '2026-11-28T10:00:00.000Z';
const entry = (trackId: string, charged: string, extra: Partial<BookEntry> = {}): BookEntry => ({
  trackId,
  kind: 'settled',
  clientId: 'svc',
  charged,
  costUnits: 1,
  createdAt: T0,
  ...extra,
});
const budget = (spentUnits: number) => [{ clientId: 'svc', window: 'daily', spentUnits }];
const rules = (report: ReturnType<typeof checkBooks>) => report.imbalances.map((i) => i.rule);

describe('checkBooks', () => {
  it('balances when every charge is ledgered once, unknowns resolved, budgets equal to charged units', () => {
    const report = checkBooks({
      charges: new Map([
        [A, 1],
        [B, 1],
      ]),
      entries: [
        entry(A, 'yes'),
        entry(B, 'possibly'),
        entry(B, 'yes', { kind: 'reconciled', revision: 1 }),
        entry(C, 'no', { reusedFrom: A, costUnits: 0, unitsSaved: 1 }),
      ],
      budgets: budget(2),
      budgetsCountFrom: T0,
    });
    expect(report.imbalances).toEqual([]);
    expect(report).toMatchObject({ inquiries: 3, charged: 2, reused: 1, unitsSaved: 1 });
  });

  it('names each imbalance with its trackIds', () => {
    const report = checkBooks({
      charges: new Map([
        [A, 2],
        [B, 1],
        [C, 1],
      ]),
      entries: [entry(A, 'yes'), entry(A, 'yes'), entry(B, 'no'), entry('dddddddd-0000-4000-8000-000000000004', 'yes')],
      budgets: budget(7),
      budgetsCountFrom: T0,
    });
    expect(rules(report)).toEqual([
      'a trackId the simulator charged more than once',
      'a charge of the simulator absent from the ledger',
      'a charge settled more than once in the ledger',
      'a charge the ledger calls not charged',
      'the ledger calls charged what the simulator never charged',
      'a budget whose spent is not the charged units of its window',
    ]);
    expect(report.imbalances[1].trackIds).toEqual([C]);
  });

  it('counts budgets only from the last time Redis restarted empty', () => {
    const report = checkBooks({
      charges: new Map([
        [A, 1],
        [B, 1],
      ]),
      entries: [entry(A, 'yes'), entry(B, 'yes', { createdAt: '2026-11-28T11:00:00.000Z' })],
      budgets: budget(1),
      budgetsCountFrom: '2026-11-28T10:30:00.000Z',
    });
    expect(report.imbalances).toEqual([]);
  });
});

describe('explain', () => {
  it('names the upstream call, the answer, the fault window and the log lines of a trackId', () => {
    const started = 1_000_000;
    const attempt = {
      kind: 'login',
      replica: 0,
      outcome: '200',
      sentAt: started + 23_900,
      answeredAt: started + 24_000,
    };
    const e = explain(A.toUpperCase(), {
      started,
      upstreamCalls: [
        { trackId: A, at: started + 23_950 },
        { trackId: B, at: started + 50_000 },
      ],
      attempts: [
        { ...attempt, requestId: 'soak-30-0', trackId: A },
        { ...attempt, requestId: 'soak-31-0', outcome: 'connection' },
        { ...attempt, requestId: 'soak-32-0', trackId: B },
      ],
      faults: [
        { name: 'Redis restarted', from: started + 24_000, to: started + 24_100 },
        { name: 'PostgreSQL restarted', from: started + 36_000, to: started + 36_100 },
      ],
      logs: [`replica 0: {"trackId":"${A}"}`, `replica 1: {"trackId":"${B}"}`],
    });
    expect(e).toMatchObject({ trackId: A, upstreamCalls: [23_950], logLines: [`replica 0: {"trackId":"${A}"}`] });
    expect(e.answers.map((a) => a.requestId)).toEqual(['soak-30-0']);
    expect(e.unanswered.map((a) => a.requestId)).toEqual(['soak-31-0']);
    expect(e.faults).toEqual(['Redis restarted (24.0 s–24.1 s)']);
  });
});
