/**
 * Redis Cluster (BooksBesideRecord): the ledger's duty and settlement scripts reserve and settle
 * the budget beside the record, and derive the held marker from the reservations' key, an
 * undeclared key in the accounting slot. An `unknown` settled this way must be held for the
 * reconciliation's move, and the move must land once, on a real three-master cluster.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import type { BudgetMove } from '../src/budget/budget.store.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import { DEFAULT_INQUIRY_PRICES } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import type { InquiryFactsInput } from '../src/ledger/ledger-queue.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { RedisCluster } from './support/redis-cluster.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 3).toString('base64')) }]);
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);

let cluster: RedisCluster;
let client: Cluster;
beforeAll(async () => {
  cluster = await RedisCluster.start();
  client = new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })));
}, 60_000);
afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

it('an unknown settled beside the record is held on a cluster; its resolution gives the units back once', async () => {
  const keys = new RedisKeys('held');
  const queue = new RedisLedgerQueue(client, keys, cipher, prices);
  const budgets = new RedisBudgetStore(client, keys);
  const now = Date.now();
  const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);
  const limits = [{ name: 'svc-a', daily: -1, monthly: -1 }];
  const record: InquiryFactsInput = {
    trackId: randomUUID(),
    clientId: 'svc-a',
    operation: 'iban',
    requestHandlingType: 'advanced',
    status: 'unknown',
    createdAt: new Date(now).toISOString(),
    deadlineAt: new Date(now + 60_000).toISOString(),
    charged: 'possibly',
  };
  const reservation = { trackId: record.trackId, units: 3, now, concludeAt: now + 60_000, windows, budgets: limits };
  expect(await queue.owe(record, reservation)).toEqual({ admitted: true });
  await queue.settled(record, 'unknown');
  const spent = async () => (await budgets.read(windows, ['svc-a'], Date.now())).get('svc-a|monthly');
  expect(await spent()).toEqual({ spent: 3, reserved: 0 });
  // Its units, the revision applied, and the generations of the windows that counted it.
  expect(await client.get(keys.budgetHeld(record.trackId))).toMatch(/^3:0:\d+-[0-9a-f]{8}:\d+-[0-9a-f]{8}$/);
  const move: BudgetMove = {
    trackId: record.trackId,
    revision: 1,
    charged: false,
    units: 3,
    budgets: ['svc-a'],
    daily: windows.daily.id,
    monthly: windows.monthly.id,
  };
  expect(await budgets.resolve(move, Date.now())).toBe('moved');
  expect(await budgets.resolve(move, Date.now())).toBe('applied_before');
  expect(await spent()).toEqual({ spent: 0, reserved: 0 });
});
