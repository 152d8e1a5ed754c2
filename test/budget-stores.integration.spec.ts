/**
 * The budget store's rules (src/budget/budget.store.ts), run against both implementations: the
 * Redis scripts on a real redis-server and the in-process store. The clock is passed in, so the
 * deadlines and windows are driven by the test, not waited for.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import { BudgetStore, MemoryBudgetStore, type BudgetLimits } from '../src/budget/budget.store.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.error.js';
import { redisPerFile } from './support/file-redis.js';

const redis = redisPerFile();

// Today at 10:00 UTC: the Redis scripts expire a window's keys at its end on Redis's own clock, so
// a window of a fixed past date would already be gone when the test runs later.
const NOW = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 10 * 3_600_000;
const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(NOW);
const LIMITS: BudgetLimits[] = [
  { name: 'svc-a', daily: 5, monthly: 100 },
  { name: '*', daily: -1, monthly: 8 },
];
const UNLIMITED: BudgetLimits[] = LIMITS.map((b) => ({ ...b, daily: -1, monthly: -1 }));

const stores: Array<[string, () => BudgetStore]> = [
  ['memory', () => new MemoryBudgetStore()],
  ['redis', () => new RedisBudgetStore(redis.client(), redis.keys('budget'))],
];

describe.each(stores)('%s budget store', (_name, make) => {
  const reserve = (store: BudgetStore, trackId: string, units = 1, budgets = LIMITS, now = NOW) =>
    store.reserve({ trackId, units, now, concludeAt: now + 10_000, windows, budgets });
  const usage = async (store: BudgetStore, now = NOW) =>
    Object.fromEntries(await store.read(windows, ['svc-a', '*'], now));

  it('reserves, commits and releases, and refuses what does not fit (monthly first), the first refusal marked once', async () => {
    const store = make();
    for (const id of ['t1', 't2', 't3', 't4', 't5']) expect(await reserve(store, id)).toEqual({ admitted: true });
    expect(await reserve(store, 't6')).toEqual({
      admitted: false,
      window: 'daily',
      budget: 'svc-a',
      remaining: 0,
      first: true,
    });
    expect(await reserve(store, 't7')).toMatchObject({ admitted: false, first: false });
    await store.settle('t1', 'commit', NOW);
    await store.settle('t2', 'release', NOW);
    // A second settlement of the same reservation changes nothing.
    await store.settle('t2', 'commit', NOW);
    expect(await usage(store)).toMatchObject({
      'svc-a|daily': { spent: 1, reserved: 3 },
      'svc-a|monthly': { spent: 1, reserved: 3 },
      '*|monthly': { spent: 1, reserved: 3 },
    });
    // `*` has 8 a month: 4 used, another client's 5 units do not fit and name the monthly window.
    const other = [{ name: 'svc-b', daily: -1, monthly: -1 }, LIMITS[1]];
    expect(await reserve(store, 'b1', 5, other)).toMatchObject({
      admitted: false,
      window: 'monthly',
      budget: '*',
      remaining: 4,
    });
    expect(await reserve(store, 'b2', 4, other)).toEqual({ admitted: true });
  });

  it('concludes a reservation left past its deadline as spent; a late release still gives it back', async () => {
    const store = make();
    await reserve(store, 'dead');
    await reserve(store, 'late');
    expect(await usage(store, NOW + 9_999)).toMatchObject({ 'svc-a|daily': { spent: 0, reserved: 2 } });
    expect(await usage(store, NOW + 10_000)).toMatchObject({ 'svc-a|daily': { spent: 2, reserved: 0 } });
    await store.settle('late', 'release', NOW + 11_000);
    expect(await usage(store, NOW + 11_000)).toMatchObject({ 'svc-a|daily': { spent: 1, reserved: 0 } });
  });

  it('moves a resolution once per revision by its recorded units and windows; a correction moves them back', async () => {
    const store = make();
    await reserve(store, 'u1', 3);
    await reserve(store, 'u2', 1);
    await store.settle('u1', 'unknown', NOW);
    await store.settle('u2', 'unknown', NOW);
    const move = (trackId: string, revision: number, charged: boolean, units: number) => ({
      trackId,
      revision,
      charged,
      units,
      budgets: ['svc-a', '*'],
      daily: windows.daily.id,
      monthly: windows.monthly.id,
    });
    await store.resolve(move('u1', 1, false, 3), NOW);
    await store.resolve(move('u1', 1, false, 3), NOW);
    await store.resolve(move('u2', 1, true, 1), NOW);
    expect(await usage(store)).toMatchObject({
      'svc-a|daily': { spent: 1, reserved: 0 },
      '*|monthly': { spent: 1, reserved: 0 },
    });
    // A later list corrects u1 (no → yes): its units are spent again, once.
    await store.resolve(move('u1', 2, true, 3), NOW);
    await store.resolve(move('u1', 2, true, 3), NOW);
    expect(await usage(store)).toMatchObject({ 'svc-a|daily': { spent: 4 }, '*|monthly': { spent: 4 } });
    // Resolved while still reserved: the reservation is settled by the resolution.
    expect(await reserve(store, 'u3', 1)).toEqual({ admitted: true });
    await store.resolve(move('u3', 1, false, 1), NOW);
    expect(await usage(store)).toMatchObject({ 'svc-a|daily': { spent: 4, reserved: 0 } });
    // An earlier revision told after a later one moves nothing; an ordinary commit is never moved.
    await store.resolve(move('u1', 1, false, 3), NOW);
    await reserve(store, 'ok', 2, UNLIMITED);
    await store.settle('ok', 'commit', NOW);
    await store.resolve(move('ok', 1, false, 2), NOW);
    expect(await usage(store)).toMatchObject({ 'svc-a|daily': { spent: 6 }, '*|monthly': { spent: 6 } });
  });

  it('agrees on a concluded reservation whether its late release or its resolution comes first', async () => {
    const store = make();
    const later = NOW + 10_000;
    const move = (trackId: string, charged: boolean) => ({
      trackId,
      revision: 1,
      charged,
      units: 2,
      budgets: ['svc-a', '*'],
      daily: windows.daily.id,
      monthly: windows.monthly.id,
    });
    for (const id of ['a', 'b', 'c', 'd']) await reserve(store, id, 2, UNLIMITED);
    await store.settle('a', 'release', later);
    await store.resolve(move('a', false), later);
    await store.settle('b', 'release', later);
    await store.resolve(move('b', true), later);
    await store.resolve(move('c', false), later);
    await store.settle('c', 'release', later);
    await store.resolve(move('d', true), later);
    await store.settle('d', 'release', later);
    // a, c: not charged (0); b, d: charged (2 each).
    expect(await usage(store, later)).toMatchObject({ 'svc-a|daily': { spent: 4, reserved: 0 } });
  });
});

it('an unreachable Redis is a store_unavailable, nothing reserved', async () => {
  const client = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  const store = new RedisBudgetStore(client, new RedisKeys('unreachable'));
  await expect(
    store.reserve({ trackId: 'x', units: 1, now: NOW, concludeAt: NOW + 1, windows, budgets: LIMITS }),
  ).rejects.toBeInstanceOf(StoreUnavailableError);
  client.disconnect();
});
