/**
 * Reconciliation that cannot destroy facts, and budget moves from the record (issue 33, items
 * 1 and 2), on a PostgreSQL server and on PGlite, with the budgets in a real redis-server:
 * a file without rows is refused before anything is written; a dry run writes nothing; a wrong
 * list is corrected by the right one (history kept, spent back to what it was); a resolution
 * gives back exactly the units recorded, to the budgets recorded, whatever the prices and
 * budgets are now; a late failed settlement and a resolution give units back once, and a window
 * Redis made afresh is given nothing back; and what was applied is known from PostgreSQL, so a
 * Redis that lost its data replays nothing. Also: a failed settlement whose upstream message is
 * cut inside a surrogate pair goes from the Redis queue to an entry, not parked.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ConfigService } from '@nestjs/config';
import { Redis } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import { reservationRecord, type BudgetStore, type ReserveRequest } from '../src/budget/budget.store.js';
import { RefusalTally } from '../src/caller-auth/refusal-tally.js';
import { Budgets } from '../src/budget/budgets.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import type { AppConfig } from '../src/config/app-config.js';
import { DEFAULT_INQUIRY_PRICES, type BudgetEntry } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { latestActions } from '../src/ledger/operator-actions.js';
import { Reconciliations } from '../src/ledger/reconciliation.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import type { ProblemException } from '../src/problem/problem.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';
import { capturedNestErrors } from './support/captured-log.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const metrics = { unsentCharges: { inc: () => undefined } } as never;
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);

let postgres: PostgresServer;
let redisServer: RedisServer;
let redis: Redis;
let prefixes = 0;
// The errors these tests provoke on purpose, captured (never printed into a green run's log).
capturedNestErrors([/its budget moves are pending until the same file is sent again/]);

beforeAll(async () => {
  [postgres, redisServer] = await Promise.all([PostgresServer.start(), RedisServer.start()]);
  redis = new Redis(redisServer.url);
});
afterAll(async () => {
  redis?.disconnect();
  await Promise.all([postgres?.stop(), redisServer?.stop()]);
});

/** Budgets as configured now (prices and budgets), on this file's Redis under a prefix of its own. */
function budgetsWith(store: BudgetStore, entries: BudgetEntry[], price: number): Budgets {
  const slices: Partial<AppConfig> = {
    budgets: { entries, timeZone: 'UTC', calendar: 'gregory' },
    inquiryPrices: { shahkar: { standard: price, advanced: price }, iban: { standard: price, advanced: price } },
    secretFiles: { pollIntervalMs: 60_000 },
  };
  const config = { get: (name: keyof AppConfig) => slices[name] } as unknown as ConfigService<AppConfig, true>;
  const metrics = new GatewayMetrics();
  return new Budgets(config, new InquiryPrices(config), store, metrics, new RefusalTally('UTC', metrics.registry));
}

const csv = (...lines: string[]) => Readable.from([`${lines.join('\n')}\n`]);
const list = (...trackIds: string[]) => csv('trackId', ...trackIds);

describe.each(ledgerEngines(() => postgres.url, 'reconciliation'))('reconciliation on %s', (_engine, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  let budgetStore: RedisBudgetStore;
  let month = 0;
  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new LedgerStore(db, cipher, 90);
  });
  afterAll(() => closeLedger(db));

  /** A budget store on a key prefix of its own (answered, for a test that empties it). */
  function freshBudgetStore(): string {
    const prefix = `reconcile-${++prefixes}`;
    budgetStore = new RedisBudgetStore(redis, new RedisKeys(prefix));
    return prefix;
  }

  /**
   * A fresh budget prefix and a month of its own (2040-01, 2040-02, …) for each test's
   * inquiries: a named period resolves every unknown in it. Budgets then: client `svc-a`, daily 100.
   */
  function setting() {
    freshBudgetStore();
    month += 1;
    const from = new Date(Date.UTC(2040, month - 1, 1));
    return {
      from,
      to: new Date(Date.UTC(2040, month, 1)),
      at: (day: number) => new Date(from.getTime() + day * 86_400_000),
    };
  }

  /** An inquiry the budget admitted (units at today's price), that ended `unknown`: kept as spent. */
  async function unknownInquiry(budgets: Budgets, createdAt: Date): Promise<QueuedEntry> {
    const overdue = queuedEntry({
      kind: 'overdue',
      status: 'unknown',
      charged: 'possibly',
      completedAt: undefined,
      createdAt: createdAt.toISOString(),
    });
    const request = budgets.reservationFor('svc-a', 'shahkar', 'standard', overdue.trackId, Date.now() + 60_000)!;
    expect(await budgetStore.reserve(request)).toEqual({ admitted: true });
    await budgetStore.settle(overdue.trackId, 'unknown', Date.now());
    const entry = { ...overdue, costUnits: request.units, reservation: reservationRecord(request) };
    expect(await store.insert([entry])).toBe(1);
    return entry;
  }

  const spent = async (budgets: Budgets, clientId = 'svc-a') =>
    (await budgets.all()).find((b) => b.clientId === clientId)?.budgets.map((b) => b.spentUnits) ?? [];
  const history = async (trackId: string) =>
    (await store.facts(trackId))?.entries.map((e) => [e.kind, e.revision ?? 0, e.charged]);
  const counts = async () => {
    const [row] = await db.query<{ entries: number; moves: number; unsent: number }>(
      `SELECT (SELECT count(*)::int FROM ledger_entries) AS entries,
         (SELECT count(*)::int FROM ledger_budget_moves) AS moves,
         (SELECT count(*)::int FROM ledger_unsent_charges) AS unsent`,
    );
    return row;
  };

  it('refuses an empty body, a header-only file, JSON sent as CSV and a file without trackId: nothing written, nothing moved', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 2);
    const unknown = await unknownInquiry(budgets, period.at(1));
    const reconciliations = new Reconciliations(store, metrics, { resolved: (m) => budgets.resolveUnknown(m) });
    const before = await counts();
    for (const body of [
      Readable.from([]),
      csv('trackId'),
      csv('\uFEFFtrackId', '', ''),
      csv(JSON.stringify({ trackIds: [unknown.trackId] })),
      csv('id', unknown.trackId),
    ]) {
      const refused = await reconciliations.reconcile(body, { period }).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'validation_failed', status: 400 });
    }
    expect(await counts()).toEqual(before);
    expect(await history(unknown.trackId)).toEqual([['overdue', 0, 'possibly']]);
    expect(await spent(budgets)).toEqual([2]);
  });

  it('dryRun answers the same report and writes nothing: no entry, no unsent charge, no budget move', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 1);
    const [absent, listed] = [await unknownInquiry(budgets, period.at(1)), await unknownInquiry(budgets, period.at(2))];
    const told: unknown[] = [];
    const reconciliations = new Reconciliations(store, metrics, {
      resolved: (m) => {
        told.push(m);
        return budgets.resolveUnknown(m);
      },
    });
    const stranger = '00000000-0000-4000-8000-0000000000aa';
    const before = await counts();
    const dry = await reconciliations.reconcile(list(listed.trackId, stranger), { period, dryRun: true });
    expect(await counts()).toEqual(before);
    expect(told).toEqual([]);
    expect(await spent(budgets)).toEqual([2]);
    const real = await reconciliations.reconcile(list(listed.trackId, stranger), { period });
    const { dryRun: wasDry, ...dryReport } = dry;
    const { dryRun: wasReal, ...realReport } = real;
    expect([wasDry, wasReal]).toEqual([true, false]);
    expect(dryReport).toEqual(realReport);
    expect(real).toMatchObject({
      resolved: { count: 1, trackIds: [listed.trackId], truncated: false },
      resolvedNotCharged: { count: 1, trackIds: [absent.trackId], truncated: false },
      chargedNotInLedger: { count: 1, trackIds: [stranger], truncated: false },
    });
    expect(await counts()).toEqual({ entries: before.entries + 2, moves: before.moves + 2, unsent: before.unsent + 1 });
    expect(await spent(budgets)).toEqual([1]);
  });

  it('a confirmation applies exactly its dry run (by its digest) and records the operator; after the ledger changed, 409 and nothing written', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 1);
    const [first, second] = [await unknownInquiry(budgets, period.at(1)), await unknownInquiry(budgets, period.at(2))];
    const reconciliations = new Reconciliations(store, metrics);
    const operator = { kind: 'operator' as const, id: 'op-7', name: 'Parisa Rahimi' };
    const dry = await reconciliations.reconcile(list(first.trackId, second.trackId), { period, dryRun: true });
    expect(dry.digest).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(dry.resolved).toMatchObject({ count: 2, units: 2 });
    // Meanwhile another list resolves one of them: the report the operator saw is not what would happen now.
    await reconciliations.reconcile(list(first.trackId));
    const before = await counts();
    const refused = await reconciliations
      .reconcile(list(first.trackId, second.trackId), { period, digest: dry.digest, operator })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'reconciliation_changed', status: 409 });
    expect(await counts()).toEqual(before);
    const again = await reconciliations.reconcile(list(first.trackId, second.trackId), { period, dryRun: true });
    expect(again.digest).not.toBe(dry.digest);
    const applied = await reconciliations.reconcile(list(first.trackId, second.trackId), {
      period,
      digest: again.digest,
      operator,
      requestId: 'req-confirm-1',
    });
    expect(applied).toMatchObject({ dryRun: false, digest: again.digest, resolved: { count: 1 } });
    expect(await counts()).toMatchObject({ entries: before.entries + 1 });
    const [recorded] = await latestActions(store.db, 1);
    expect(recorded).toMatchObject({
      action: 'reconciliation',
      kind: 'operator',
      id: 'op-7',
      name: 'Parisa Rahimi',
      requestId: 'req-confirm-1',
      summary: { rows: 2, resolved: 1, chargedAndRecorded: 1 },
    });
  });

  it('two confirmations of one dry run at once (two replicas): one applies, the other is 409, the resolutions written once', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 1);
    const [first, second] = [await unknownInquiry(budgets, period.at(1)), await unknownInquiry(budgets, period.at(2))];
    const dry = await new Reconciliations(store, metrics).reconcile(list(first.trackId, second.trackId), {
      period,
      dryRun: true,
    });
    const before = await counts();
    const outcomes = await Promise.allSettled(
      [new Reconciliations(store, metrics), new Reconciliations(store, metrics)].map((replica) =>
        replica.reconcile(list(first.trackId, second.trackId), { period, digest: dry.digest }),
      ),
    );
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(outcomes.find((o) => o.status === 'rejected')).toMatchObject({
      reason: { code: 'reconciliation_changed', status: 409 },
    });
    expect(await counts()).toMatchObject({ entries: before.entries + 2 });
    expect(await history(first.trackId)).toEqual([
      ['overdue', 0, 'possibly'],
      ['reconciled', 1, 'yes'],
    ]);
  });

  it("refuses a confirmation with another list whose report reads the same (unsent charges past the report's 1 000): 409, nothing written", async () => {
    const reconciliations = new Reconciliations(store, metrics);
    // Charged, never sent: 1 001 trackIds the ledger does not know; the report lists the first 1 000.
    const shown = Array.from({ length: 1_001 }, () => randomUUID()).sort();
    const dry = await reconciliations.reconcile(list(...shown), { dryRun: true });
    expect(dry.chargedNotInLedger).toMatchObject({ count: 1_001, truncated: true });
    // Another file: the same first 1 000 and another last one, past what the report lists.
    const other = [...shown.slice(0, 1_000), 'ffffffff-ffff-4fff-bfff-ffffffffffff'];
    const before = await counts();
    const refused = await reconciliations
      .reconcile(list(...other), { digest: dry.digest })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'reconciliation_changed', status: 409 });
    expect(await counts()).toEqual(before);
    // The file the dry run read is applied.
    await reconciliations.reconcile(list(...shown), { digest: dry.digest });
    expect(await counts()).toMatchObject({ unsent: before.unsent + 1_001 });
  });

  it('an upload whose body fails mid-way is refused and frees the guard: the next upload runs; meanwhile another is 429', async () => {
    const reconciliations = new Reconciliations(store, metrics);
    const stranger = randomUUID();
    // The client's connection reset (an error) and a body closed before its end (no error).
    for (const end of [(body: Readable) => body.destroy(new Error('aborted')), (body: Readable) => body.destroy()]) {
      const body = new Readable({ read: () => undefined });
      body.push(`trackId\n${stranger}\n`);
      const refused = reconciliations.reconcile(body).catch((error: unknown) => error);
      // One at a time per instance: a second list while the first is read is refused, not queued.
      const busy = await reconciliations.reconcile(list(stranger)).catch((error: unknown) => error);
      expect(busy).toMatchObject({ code: 'rate_limited', status: 429 });
      setImmediate(() => end(body));
      expect(await refused).toMatchObject({ code: 'validation_failed', status: 400 });
    }
    const report = await reconciliations.reconcile(list(stranger));
    expect(report.chargedNotInLedger.trackIds).toEqual([stranger]);
  });

  it('reports a listed inquiry whose entry the ledger parked as parked, not as charged but never sent (no unsent-charge record)', async () => {
    // Refused by the database for a lone surrogate (entry-writer.ts): in ledger_parked, not ledger_entries.
    const refused = queuedEntry({ clientId: 'jwt:app\ud800' });
    await new ParkedEntries(store).park(refused, { code: '22P05', message: 'unsupported Unicode escape sequence' });
    const stranger = randomUUID();
    const before = await counts();
    const report = await new Reconciliations(store, metrics).reconcile(list(refused.trackId, stranger));
    expect(report).toMatchObject({
      chargedNotInLedger: { count: 1, trackIds: [stranger], truncated: false },
      parked: { count: 1, trackIds: [refused.trackId], truncated: false },
    });
    expect(await counts()).toEqual({ ...before, unsent: before.unsent + 1 });
  });

  it('writes a failed settlement whose upstream message is cut at 200 characters inside a surrogate pair (not parked)', async () => {
    const queue = new RedisLedgerQueue(redis, new RedisKeys(`reconcile-${++prefixes}`), cipher, prices);
    const now = new Date().toISOString();
    // A provider's sentence with an emoji straddling the 200th UTF-16 unit: valid text, cut by the gateway.
    const message = `${'x'.repeat(199)}😀 more`;
    const trackId = randomUUID();
    await queue.settled({
      trackId,
      clientId: 'svc-a',
      operation: 'shahkar',
      requestHandlingType: 'standard',
      status: 'failed',
      charged: 'no',
      costUnits: 1,
      createdAt: now,
      completedAt: now,
      upstream: { code: 500, message },
    });
    const [read] = await queue.read(10);
    await store.insert([read.entry]);
    const facts = await store.facts(trackId);
    expect(facts?.entries.map((e) => [e.kind, e.status])).toEqual([['settled', 'failed']]);
  });

  it('a wrong list then the right one: corrected, history kept, spent back to what it was; the same file again writes nothing', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 2);
    const [a, b] = [await unknownInquiry(budgets, period.at(1)), await unknownInquiry(budgets, period.at(2))];
    const reconciliations = new Reconciliations(store, metrics, { resolved: (m) => budgets.resolveUnknown(m) });
    expect(await spent(budgets)).toEqual([4]);

    // Wrong: a list holding b only, for the period: a is resolved as not charged.
    const wrong = await reconciliations.reconcile(list(b.trackId), { period });
    expect(wrong.resolvedNotCharged.trackIds).toEqual([a.trackId]);
    expect(await spent(budgets)).toEqual([2]);

    // Right: both were charged. a is corrected, given its units again.
    const right = await reconciliations.reconcile(list(a.trackId, b.trackId), { period });
    expect(right).toMatchObject({
      correctedToCharged: { count: 1, trackIds: [a.trackId] },
      chargedAndRecorded: { count: 1, trackIds: [b.trackId] },
      chargedButRecordedNotCharged: { count: 0 },
    });
    expect(await spent(budgets)).toEqual([4]);
    expect(await history(a.trackId)).toEqual([
      ['overdue', 0, 'possibly'],
      ['reconciled', 1, 'no'],
      ['reconciled', 2, 'yes'],
    ]);
    const [row] = await usage(store, period.from, period.to, 'month');
    expect(row).toMatchObject({ inquiries: 2, succeeded: 2, unknown: 0, unitsSpent: 4n });

    // The right file again: nothing appended, nothing moved.
    const before = await counts();
    const again = await reconciliations.reconcile(list(a.trackId, b.trackId), { period });
    expect(again).toMatchObject({ chargedAndRecorded: { count: 2 }, correctedToCharged: { count: 0 } });
    expect(await counts()).toEqual(before);
    expect(await spent(budgets)).toEqual([4]);

    // And the wrong one again corrects back (yes → no): revision 3, its units given back.
    const back = await reconciliations.reconcile(list(b.trackId), { period });
    expect(back.correctedToNotCharged.trackIds).toEqual([a.trackId]);
    expect((await history(a.trackId))?.at(-1)).toEqual(['reconciled', 3, 'no']);
    expect(await spent(budgets)).toEqual([2]);
  });

  it('gives back exactly the recorded units to the recorded budget, after a price change (1 → 5) and a new budget', async () => {
    const period = setting();
    const then = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 1);
    const [a, b] = [await unknownInquiry(then, period.at(1)), await unknownInquiry(then, period.at(2))];
    // Now: each inquiry costs 5, and `*` (all callers) and svc-b have budgets they did not have.
    const now = budgetsWith(
      budgetStore,
      [
        { clientId: 'svc-a', daily: 100 },
        { clientId: 'svc-b', daily: 100 },
        { clientId: '*', daily: 1000 },
      ],
      5,
    );
    expect([await spent(now), await spent(now, '*'), await spent(now, 'svc-b')]).toEqual([[2], [0], [0]]);
    const reconciliations = new Reconciliations(store, metrics, { resolved: (m) => now.resolveUnknown(m) });
    await reconciliations.reconcile(list(b.trackId), { period });
    expect([await spent(now), await spent(now, '*'), await spent(now, 'svc-b')]).toEqual([[1], [0], [0]]);
    expect((await store.facts(a.trackId))?.entries.at(-1)).toMatchObject({
      kind: 'reconciled',
      charged: 'no',
      reservation: { units: 1, budgets: ['svc-a'] },
    });
  });

  it('gives units back once when a late failed settlement released them before a reconciliation resolves the overdue entry', async () => {
    freshBudgetStore();
    const now = Date.now();
    const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);
    const trackId = randomUUID();
    // Reserved 2; the inquiry's deadline (concludeAt) passes with no settlement: concluded as spent.
    const request: ReserveRequest = {
      trackId,
      units: 2,
      now,
      concludeAt: now + 1,
      windows,
      budgets: [{ name: 'svc-a', daily: 100, monthly: -1 }],
    };
    expect(await budgetStore.reserve(request)).toEqual({ admitted: true });
    // Every later step runs a second on (the scripts take the clock as an argument): past concludeAt.
    const later = now + 1_000;
    const daily = async () => (await budgetStore.read(windows, ['svc-a'], later)).get('svc-a|daily');
    expect(await daily()).toEqual({ spent: 2, reserved: 0 });
    // Its overdue `unknown` entry is written; the owed settlement lands late as `failed`: released.
    const overdue = queuedEntry({
      trackId,
      kind: 'overdue',
      status: 'unknown',
      charged: 'possibly',
      completedAt: undefined,
      costUnits: 2,
      createdAt: new Date(now).toISOString(),
      reservation: reservationRecord(request),
    });
    expect(await store.insert([overdue])).toBe(1);
    await budgetStore.settle(trackId, 'release', later);
    expect(await daily()).toEqual({ spent: 0, reserved: 0 });
    // The settled (failed) entry is not in PostgreSQL yet (drainer backlog, or parked): a
    // reconciliation of the period that does not list it resolves the overdue entry as not charged.
    const period = { from: new Date(now - 60_000), to: new Date(now + 60_000) };
    const reconciliations = new Reconciliations(store, metrics, {
      resolved: async (move) => {
        await budgetStore.resolve(move, later);
      },
    });
    const report = await reconciliations.reconcile(list(randomUUID()), { period });
    expect(report.resolvedNotCharged.trackIds).toEqual([trackId]);
    // Not charged, given back once: spent 0, never below.
    expect(await daily()).toEqual({ spent: 0, reserved: 0 });
  });

  it('gives nothing back to a window that forgot the units (Redis restarted empty) when a later resolution says not charged', async () => {
    const prefix = freshBudgetStore();
    const now = Date.now();
    const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);
    const request = (trackId: string, units: number): ReserveRequest => ({
      trackId,
      units,
      now,
      concludeAt: now + 60_000,
      windows,
      budgets: [{ name: 'svc-a', daily: 100, monthly: -1 }],
    });
    const daily = async () => (await budgetStore.read(windows, ['svc-a'], now)).get('svc-a|daily');
    // An inquiry spends 2 and settles `unknown` (committed); its entry reaches the ledger.
    const lost = request(randomUUID(), 2);
    await budgetStore.reserve(lost);
    await budgetStore.settle(lost.trackId, 'commit', now);
    const unknown = queuedEntry({
      trackId: lost.trackId,
      status: 'unknown',
      charged: 'possibly',
      costUnits: 2,
      createdAt: new Date(now).toISOString(),
      reservation: reservationRecord(lost),
    });
    expect(await store.insert([unknown])).toBe(1);
    // Redis restarts empty (or the in-process store restarts): the window's counts are gone.
    const kept = await redis.keys(`{${prefix}:acct}:*`);
    await redis.del(...kept);
    // The next inquiry of the day spends 1 in the window made afresh.
    const next = request(randomUUID(), 1);
    await budgetStore.reserve(next);
    await budgetStore.settle(next.trackId, 'commit', now);
    expect(await daily()).toEqual({ spent: 1, reserved: 0 });
    // The provider's bill for the period does not list the unknown: resolved as not charged.
    const period = { from: new Date(now - 60_000), to: new Date(now + 60_000) };
    const outcomes: string[] = [];
    const reconciliations = new Reconciliations(store, metrics, {
      resolved: async (move) => {
        outcomes.push(await budgetStore.resolve(move, now));
      },
    });
    const report = await reconciliations.reconcile(list(randomUUID()), { period });
    expect(report.resolvedNotCharged.trackIds).toEqual([lost.trackId]);
    expect(outcomes).toEqual(['not_held']);
    // The fresh window never counted those 2 units: it keeps the 1 it counted.
    expect(await daily()).toEqual({ spent: 1, reserved: 0 });
  });

  it('after Redis lost its data, an unrelated reconciliation replays nothing; a failed move is applied by a resend', async () => {
    const period = setting();
    const budgets = budgetsWith(budgetStore, [{ clientId: 'svc-a', daily: 100 }], 2);
    const old = await unknownInquiry(budgets, period.at(1));
    let failures = 1;
    const unsent: number[] = [];
    const counting = { unsentCharges: { inc: (n: number) => unsent.push(n) } } as never;
    const reconciliations = new Reconciliations(store, counting, {
      resolved: (m) =>
        failures-- > 0
          ? Promise.reject(new StoreUnavailableError('budget resolve', new Error('Connection is closed.')))
          : budgets.resolveUnknown(m),
    });
    // Redis fails during the move: the resolution is a fact, its move not recorded; the answer
    // says so (not "nothing was sent"), the unsent charge is still counted, and a resend applies it.
    const failed = (await reconciliations
      .reconcile(csv('trackId', '00000000-0000-4000-8000-0000000000bb'), { period })
      .then(
        () => undefined,
        (error: unknown) => error,
      )) as ProblemException;
    expect(failed).toMatchObject({ code: 'store_unavailable', status: 503 });
    expect(failed.detail).toMatch(/resolutions are recorded.*budget moves.*pending.*same file again/);
    expect(failed.detail).not.toMatch(/nothing was sent/);
    expect(unsent).toEqual([1]);
    expect(await spent(budgets)).toEqual([2]);
    await reconciliations.reconcile(csv('trackId', '00000000-0000-4000-8000-0000000000bb'), { period });
    expect(await spent(budgets)).toEqual([0]);
    expect(await history(old.trackId)).toEqual([
      ['overdue', 0, 'possibly'],
      ['reconciled', 1, 'no'],
    ]);

    // Redis loses everything; a new inquiry spends 2 in the fresh window; an unrelated list over the period.
    await redis.flushall();
    const fresh = await unknownInquiry(budgets, period.at(3));
    expect(await spent(budgets)).toEqual([2]);
    await reconciliations.reconcile(list(fresh.trackId), { period });
    expect(await spent(budgets)).toEqual([2]);
  });
});
