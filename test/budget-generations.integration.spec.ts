/**
 * No phantom give-back (src/budget/budget-lua.ts, window generations): units go back, or move,
 * only in a window that counted the inquiry. A window Redis lost and new reservations made again
 * has another generation, and an older reservation's release or a resolution of an older
 * `unknown` leaves it alone. On a real redis-server, restarted empty, and with a window lost
 * alone (as eviction under a `volatile-*` maxmemory policy drops keys with an expiry, the
 * windows and markers, and never the reservations' hash, which has none).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import type { BudgetLimits, ReserveRequest } from '../src/budget/budget.store.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { RedisServer } from './support/redis-server.js';

const NOW = Date.now();
const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(NOW);
const LIMITS: BudgetLimits[] = [{ name: 'svc-a', daily: 100, monthly: 1000 }];

let server: RedisServer;
let client: Redis;
let prefixes = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  client = new Redis(server.url, { maxRetriesPerRequest: 20 });
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

function fresh() {
  const keys = new RedisKeys(`gen${prefixes++}`);
  const store = new RedisBudgetStore(client as never, keys);
  const request = (units: number): ReserveRequest => ({
    trackId: randomUUID(),
    units,
    now: NOW,
    concludeAt: NOW + 60_000,
    windows,
    budgets: LIMITS,
  });
  const usage = async () => {
    const read = await store.read(windows, ['svc-a'], NOW);
    return { daily: read.get('svc-a|daily'), monthly: read.get('svc-a|monthly') };
  };
  /** The day and month windows lost, nothing else (an eviction). */
  const loseWindows = () => client.del(keys.budgetWindow(windows.daily.id), keys.budgetWindow(windows.monthly.id));
  return { store, request, usage, loseWindows };
}

describe('a window made again after Redis lost it', () => {
  it('keeps the new reservations whole when the one made before Redis restarted empty is released', async () => {
    const { store, request, usage } = fresh();
    const before = request(2);
    await store.reserve(before);
    await server.restart();
    const after = request(1);
    await store.reserve(after);

    await store.settle(before.trackId, 'release', NOW);
    expect(await usage()).toEqual({ daily: { spent: 0, reserved: 1 }, monthly: { spent: 0, reserved: 1 } });
    await store.settle(after.trackId, 'commit', NOW);
    expect(await usage()).toEqual({ daily: { spent: 1, reserved: 0 }, monthly: { spent: 1, reserved: 0 } });
  });

  it('gives nothing back to the new window when an older reservation is released after its windows were lost', async () => {
    const { store, request, usage, loseWindows } = fresh();
    const before = request(2);
    await store.reserve(before);
    await loseWindows();
    const after = request(1);
    await store.reserve(after);

    await store.settle(before.trackId, 'release', NOW);
    // Without generations: reserved 1 - 2 = -1, the new window's inquiry given back for free.
    expect(await usage()).toEqual({ daily: { spent: 0, reserved: 1 }, monthly: { spent: 0, reserved: 1 } });
  });

  it('moves nothing in the new window when an older unknown is resolved as not charged', async () => {
    const { store, request, usage, loseWindows } = fresh();
    const unknown = request(2);
    await store.reserve(unknown);
    await store.settle(unknown.trackId, 'unknown', NOW);
    await loseWindows();
    const after = request(1);
    await store.reserve(after);
    await store.settle(after.trackId, 'commit', NOW);

    const move = { trackId: unknown.trackId, revision: 1, charged: false, units: 2, budgets: ['svc-a'] };
    expect(await store.resolve({ ...move, daily: windows.daily.id, monthly: windows.monthly.id }, NOW)).toBe(
      'not_held',
    );
    expect(await usage()).toEqual({ daily: { spent: 1, reserved: 0 }, monthly: { spent: 1, reserved: 0 } });
  });

  it('still gives back, once, in the windows that did count the inquiry', async () => {
    const { store, request, usage } = fresh();
    const unknown = request(2);
    const late = request(3);
    await store.reserve(unknown);
    await store.reserve(late);
    await store.settle(unknown.trackId, 'unknown', NOW);
    await store.settle(late.trackId, 'release', NOW);
    const move = { trackId: unknown.trackId, revision: 1, charged: false, units: 2, budgets: ['svc-a'] };
    const windowIds = { daily: windows.daily.id, monthly: windows.monthly.id };
    expect(await store.resolve({ ...move, ...windowIds }, NOW)).toBe('moved');
    expect(await store.resolve({ ...move, ...windowIds }, NOW)).toBe('applied_before');
    expect(await usage()).toEqual({ daily: { spent: 0, reserved: 0 }, monthly: { spent: 0, reserved: 0 } });
  });
});
