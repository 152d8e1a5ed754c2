/**
 * Regressions found by the money-layer audit (branch money-audit), on a PostgreSQL server and on
 * PGlite, with queues and budgets in a real redis-server. Each case names the defect it pins.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import { reservationRecord, type ReserveRequest } from '../src/budget/budget.store.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import { DEFAULT_INQUIRY_PRICES } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { Reconciliations } from '../src/ledger/reconciliation.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 9).toString('base64')) }]);
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);
const metrics = { unsentCharges: { inc: () => undefined } } as never;

let postgres: PostgresServer;
let redisServer: RedisServer;
let redis: Redis;
let prefixes = 0;
beforeAll(async () => {
  [postgres, redisServer] = await Promise.all([PostgresServer.start(), RedisServer.start()]);
  redis = new Redis(redisServer.url);
});
afterAll(async () => {
  redis?.disconnect();
  await Promise.all([postgres?.stop(), redisServer?.stop()]);
});

describe.each(ledgerEngines(() => postgres.url, 'money-audit'))('the money layer on %s', (_engine, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  beforeAll(async () => {
    db = await open();
    await migrate(db);
    store = new LedgerStore(db, cipher, 90);
  });
  afterAll(() => closeLedger(db));

  it('writes a failed settlement whose upstream message is cut at 200 characters inside a surrogate pair (not parked)', async () => {
    const queue = new RedisLedgerQueue(redis, new RedisKeys(`audit-${++prefixes}`), cipher, prices);
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

  it('gives units back once when a late failed settlement released them before a reconciliation resolves the overdue entry', async () => {
    const budgetStore = new RedisBudgetStore(redis, new RedisKeys(`audit-${++prefixes}`));
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
    const report = await reconciliations.reconcile(Readable.from([`trackId\n${randomUUID()}\n`]), { period });
    expect(report.resolvedNotCharged.trackIds).toEqual([trackId]);
    // Not charged, given back once: spent 0, never below.
    expect(await daily()).toEqual({ spent: 0, reserved: 0 });
  });
  it('gives nothing back to a window that forgot the units (Redis restarted empty) when a later resolution says not charged', async () => {
    const prefix = `audit-${++prefixes}`;
    const budgetStore = new RedisBudgetStore(redis, new RedisKeys(prefix));
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
    const report = await reconciliations.reconcile(Readable.from([`trackId\n${randomUUID()}\n`]), { period });
    expect(report.resolvedNotCharged.trackIds).toEqual([lost.trackId]);
    expect(outcomes).toEqual(['not_held']);
    // The fresh window never counted those 2 units: it keeps the 1 it counted.
    expect(await daily()).toEqual({ spent: 1, reserved: 0 });
  });
});
