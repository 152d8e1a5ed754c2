/**
 * The way from Redis to PostgreSQL (src/ledger/): real redis-server and PostgreSQL servers.
 * Exactly once by trackId when two drainers work at once, when a drainer dies holding a batch
 * it never acknowledged, and when duties of inquiries that never settled fall due on several
 * replicas at once; nothing written while PostgreSQL is down, nor on the stream when a Redis with
 * its append-only file is SIGKILLed, is lost.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { InquiryPrices } from '../src/accounting/inquiry-prices.js';
import { BudgetCalendar } from '../src/budget/budget-windows.js';
import { BudgetStore, MemoryBudgetStore, type ReserveRequest } from '../src/budget/budget.store.js';
import { RedisBudgetStore } from '../src/budget/redis-budget.store.js';
import { DEFAULT_INQUIRY_PRICES } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { LedgerDrainer } from '../src/ledger/ledger-drainer.js';
import { LedgerMetrics } from '../src/ledger/ledger-metrics.js';
import type { InquiryFactsInput } from '../src/ledger/ledger-queue.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { MemoryLedgerQueue } from '../src/ledger/memory-ledger.queue.js';
import { RedisLedgerQueue } from '../src/ledger/redis-ledger.queue.js';
import type { InquiryRecord } from '../src/inquiry/inquiry-record.js';
import { RedisInquiryStore } from '../src/inquiry/redis-inquiry.store.js';
import { GatewayMetrics } from '../src/observability/metrics.js';
import { RedisKeys } from '../src/store/redis-keys.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { PostgresServer } from './support/postgres-server.js';
import { RedisServer } from './support/redis-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 3).toString('base64')) }]);
const prices = new InquiryPrices({ get: () => DEFAULT_INQUIRY_PRICES } as never);
const config = { get: () => ({ retentionDays: 1826, resultRetentionDays: 90, drain: true }) } as never;

let redis: RedisServer;
let postgres: PostgresServer;
const clients: Redis[] = [];
const dbs: PgLedgerDatabase[] = [];
let prefixes = 0;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
});
afterAll(async () => {
  await Promise.all(dbs.map((db) => db.close().catch(() => undefined)));
  clients.forEach((client) => client.disconnect());
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

/** One replica's parts on a key prefix shared by the replicas of one test. */
function replica(prefix: string, claimIdleMs?: number) {
  const client = new Redis(redis.url);
  clients.push(client);
  const db = new PgLedgerDatabase(postgres.url);
  dbs.push(db);
  const queue = new RedisLedgerQueue(client, new RedisKeys(prefix), cipher, prices, claimIdleMs);
  const store = new LedgerStore(db, cipher, 90);
  const drainer = new LedgerDrainer(config, db, queue, store, new LedgerMetrics(new GatewayMetrics()));
  return { client, db, queue, store, drainer };
}

function record(overrides: Partial<InquiryFactsInput> = {}): InquiryFactsInput {
  const now = Date.now();
  return {
    trackId: randomUUID(),
    clientId: 'svc-a',
    subjectSha256: 'b'.repeat(64),
    operation: 'iban',
    requestHandlingType: 'advanced',
    status: 'succeeded',
    createdAt: new Date(now).toISOString(),
    deadlineAt: new Date(now + 60_000).toISOString(),
    completedAt: new Date(now + 300).toISOString(),
    upstream: { code: 200 },
    data: { depositOwners: [{ firstName: 'Ali' }] },
    charged: 'yes',
    requestId: 'req-x',
    ...overrides,
  };
}

/** Rows per trackId for these inquiries, by kind. */
async function rows(db: PgLedgerDatabase, inquiries: InquiryFactsInput[]): Promise<Map<string, string[]>> {
  const found = await db.query<{ track_id: string; kind: string }>(
    'SELECT track_id::text, kind FROM ledger_entries WHERE track_id = ANY($1::uuid[])',
    [inquiries.map((r) => r.trackId)],
  );
  const byTrackId = new Map<string, string[]>();
  for (const row of found) byTrackId.set(row.track_id, [...(byTrackId.get(row.track_id) ?? []), row.kind]);
  return byTrackId;
}

async function drainAll(...drainers: LedgerDrainer[]): Promise<void> {
  await Promise.all(
    drainers.map(async (drainer) => {
      while ((await drainer.drainOnce()) > 0);
    }),
  );
}

describe('the ledger queue in Redis', () => {
  it('writes every settled inquiry exactly once with two drainers at once, data sealed all the way', async () => {
    const prefix = `q${prefixes++}`;
    const [a, b] = [replica(prefix), replica(prefix)];
    const settled = Array.from({ length: 2_500 }, () => record());
    for (const r of settled) await a.queue.owe(r);
    await Promise.all(settled.map((r) => a.queue.settled(r)));
    // On the stream, sealed: no personal data in clear.
    const [[, fields]] = await a.client.xrange(new RedisKeys(prefix).ledger('entries'), '-', '+', 'COUNT', 1);
    expect(fields.join(' ')).not.toContain('Ali');
    await drainAll(a.drainer, b.drainer);
    const found = await rows(a.db, settled);
    expect(found.size).toBe(settled.length);
    expect([...found.values()].every((kinds) => kinds.length === 1 && kinds[0] === 'settled')).toBe(true);
    expect(await a.queue.backlog(Date.now())).toEqual({ depth: 0, oldestAgeSeconds: 0 });
    // Settled: the duty is lifted, no `unknown` entry follows.
    expect(await a.queue.claimOverdue(Date.now() + 3_600_000, 10_000)).toBe(0);
    const facts = await a.store.facts(settled[0].trackId);
    expect(facts?.entries[0]).toMatchObject({ costUnits: 3, charged: 'yes', requestId: 'req-x', upstreamCode: 200 });
    expect(facts?.data).toEqual({ depositOwners: [{ firstName: 'Ali' }] });
  });

  it('takes over the unacknowledged batch of a drainer that died after reading it', async () => {
    const prefix = `q${prefixes++}`;
    const dying = replica(prefix);
    const survivor = replica(prefix, 200);
    const settled = Array.from({ length: 50 }, () => record());
    await Promise.all(settled.map((r) => dying.queue.settled(r)));
    expect(await dying.queue.read(1_000)).toHaveLength(50); // read, then killed: never written or acknowledged
    await new Promise((resolve) => setTimeout(resolve, 250)); // the idle time a consumer is taken for dead after
    await drainAll(survivor.drainer);
    const found = await rows(survivor.db, settled);
    expect(found.size).toBe(50);
    expect(await survivor.queue.backlog(Date.now())).toMatchObject({ depth: 0 });
  });

  it('reads again, long before a claim period, an entry Redis delivered to it whose reply was lost (a read resent)', async () => {
    const prefix = `q${prefixes++}`;
    const drainer = replica(prefix); // claim period 60 s: the autoclaim cannot be what finds it
    const [lost, next] = [record(), record()];
    await drainer.queue.settled(lost);
    expect(await drainer.queue.read(10)).toHaveLength(1); // the group made; acknowledged below
    await drainer.queue.ack((await drainer.queue.read(10)).map((m) => m.id));
    await drainer.queue.settled(lost);
    // What ioredis does after a dropped connection: the read Redis answered is sent again, so
    // Redis has delivered `lost` to this consumer and the resent read gets the entries after it.
    const stream = new RedisKeys(prefix).ledger('entries');
    await drainer.client.xreadgroup(
      'GROUP',
      'ledger-drainers',
      drainer.queue.consumer,
      'COUNT',
      1,
      'STREAMS',
      stream,
      '>',
    );
    const ready = once(drainer.client, 'ready');
    drainer.client.disconnect(true); // the dropped connection, reconnected
    await ready;
    await drainer.queue.settled(next);
    const trackIds = (await drainer.queue.read(10)).map((m) => m.entry.trackId);
    expect(trackIds).toContain(lost.trackId);
  });

  it('forgets consumers of dead processes with nothing pending, never one holding entries', async () => {
    const prefix = `q${prefixes++}`;
    const [done, holding, live] = [replica(prefix, 20), replica(prefix, 20), replica(prefix, 20)];
    const stream = new RedisKeys(prefix).ledger('entries');
    await done.queue.settled(record());
    await done.drainer.drainOnce(); // read and acknowledged: nothing pending
    await holding.queue.settled(record());
    expect(await holding.queue.read(10)).toHaveLength(1); // read, never acknowledged: pending
    const consumers = async () =>
      ((await live.client.xinfo('CONSUMERS', stream, 'ledger-drainers')) as string[][]).map((c) => c[1]).sort();
    expect(await consumers()).toEqual([done.queue.consumer, holding.queue.consumer].sort());
    await new Promise((resolve) => setTimeout(resolve, 250)); // both silent for over 10 claim periods
    expect(await live.queue.forgetDeadConsumers()).toBe(1);
    expect(await consumers()).toEqual([holding.queue.consumer]);
  });

  it('turns duties past due into one unknown, possibly charged entry each, claimed by one replica', async () => {
    const prefix = `q${prefixes++}`;
    const replicas = [replica(prefix), replica(prefix), replica(prefix)];
    const past = Date.now() - 120_000;
    const lost = Array.from({ length: 300 }, () =>
      record({
        status: 'pending',
        createdAt: new Date(past).toISOString(),
        deadlineAt: new Date(past + 1_000).toISOString(),
      }),
    );
    const settling = record({ status: 'pending' });
    for (const r of [...lost, settling]) await replicas[0].queue.owe(r);
    const claimed = await Promise.all(replicas.map((r) => r.queue.claimOverdue(Date.now(), 100)));
    expect(claimed.reduce((sum, n) => sum + n, 0)).toBe(300);
    await drainAll(...replicas.map((r) => r.drainer));
    const found = await rows(replicas[0].db, [...lost, settling]);
    expect(found.size).toBe(300);
    expect(found.has(settling.trackId)).toBe(false); // its deadline has not passed
    const facts = await replicas[0].store.facts(lost[0].trackId);
    expect(facts?.entries).toEqual([
      expect.objectContaining({ kind: 'overdue', status: 'unknown', charged: 'possibly', costUnits: 3 }),
    ]);
    expect(facts?.data).toBeUndefined();
  });

  it('writes the batch it read even when claiming overdue duties fails (Redis refusing writes when out of memory)', async () => {
    const a = replica(`q${prefixes++}`);
    const settled = Array.from({ length: 20 }, () => record());
    await Promise.all(settled.map((r) => a.queue.settled(r)));
    // Out of memory, Redis refuses the claim's XADD but still serves reads and acknowledgements,
    // and only writing and acknowledging entries frees memory.
    a.queue.claimOverdue = () => Promise.reject(new Error('OOM command not allowed when used memory > maxmemory'));
    expect(await a.drainer.drainOnce()).toBe(20);
    expect((await rows(a.db, settled)).size).toBe(20);
    expect((await a.queue.backlog(Date.now())).depth).toBe(0);
  });

  it('writes an entry whose upstream code PostgreSQL cannot store without it, and the rest of its batch', async () => {
    const a = replica(`q${prefixes++}`);
    // A hostile upstream's meta.code: any JSON number (upstream-envelope.ts checks only that).
    const settled = [4, 3_000_000_000, 2.5].map((code) => record({ status: 'failed', upstream: { code } }));
    await Promise.all(settled.map((r) => a.queue.settled(r)));
    expect(await a.drainer.drainOnce()).toBe(3);
    const codes = await Promise.all(
      settled.map(async (r) => (await a.store.facts(r.trackId))?.entries[0]?.upstreamCode),
    );
    expect(codes).toEqual([4, undefined, undefined]);
    // An entry queued as built before this check (Cluster queues the built entry) is written too.
    const [queuedBefore, lowest] = [
      queuedEntry({ upstreamCode: 3_000_000_000 }),
      queuedEntry({ upstreamCode: -(2 ** 31) }),
    ];
    await a.store.insert([queuedBefore, lowest]);
    expect((await a.store.facts(queuedBefore.trackId))?.entries[0]?.upstreamCode).toBeUndefined();
    expect((await a.store.facts(lowest.trackId))?.entries[0]?.upstreamCode).toBe(-(2 ** 31));
  });

  it('keeps entries while PostgreSQL is down and writes them once it is back', async () => {
    const prefix = `q${prefixes++}`;
    const a = replica(prefix);
    await a.store.ready();
    await postgres.kill();
    const settled = Array.from({ length: 200 }, () => record());
    await Promise.all(settled.map((r) => a.queue.settled(r)));
    await expect(a.drainer.drainOnce()).rejects.toThrow();
    expect((await a.queue.backlog(Date.now())).depth).toBe(200);
    await postgres.restart();
    await drainAll(a.drainer);
    expect((await rows(a.db, settled)).size).toBe(200);
    expect((await a.queue.backlog(Date.now())).depth).toBe(0);
  });
});

describe('the ledger queue across a Redis crash', () => {
  // The soak (docs/soak.md, run 2) found a charge absent from the ledger: its entry was on the
  // stream, not yet drained, when Redis was SIGKILLed and restarted empty. With the append-only
  // file a production Redis runs with, the stream and its consumer group survive the crash.
  it('drains, exactly once, the entries on the stream when Redis was SIGKILLed (append-only file on)', async () => {
    const aof = await RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    const client = new Redis(aof.url);
    const db = new PgLedgerDatabase(postgres.url);
    dbs.push(db);
    try {
      const queue = new RedisLedgerQueue(client, new RedisKeys(`q${prefixes++}`), cipher, prices);
      const drainer = new LedgerDrainer(
        config,
        db,
        queue,
        new LedgerStore(db, cipher, 90),
        new LedgerMetrics(new GatewayMetrics()),
      );
      const drained = Array.from({ length: 50 }, () => record());
      await Promise.all(drained.map((r) => queue.settled(r)));
      await drainAll(drainer);
      const waiting = Array.from({ length: 50 }, () => record());
      await Promise.all(waiting.map((r) => queue.settled(r)));
      await aof.restart(); // SIGKILL, then the same port and directory
      await drainAll(drainer);
      const found = await rows(db, [...drained, ...waiting]);
      expect(found.size).toBe(100);
      expect([...found.values()].every((kinds) => kinds.length === 1)).toBe(true);
      expect((await queue.backlog(Date.now())).depth).toBe(0);
    } finally {
      client.disconnect();
      await aof.stop();
    }
  });
});

describe('the ledger queue in the process (REDIS_URL unset)', () => {
  it('owes, settles, claims overdue duties and acknowledges like the Redis one', async () => {
    const queue = new MemoryLedgerQueue(prices, new MemoryBudgetStore());
    const settled = record();
    const lost = record({ status: 'pending', deadlineAt: new Date(Date.now() - 60_000).toISOString() });
    await queue.owe(settled);
    await queue.owe(lost);
    await queue.settled(settled);
    expect(await queue.claimOverdue(Date.now(), 10)).toBe(1);
    const batch = await queue.read(10);
    expect(batch.map((m) => [m.entry.trackId, m.entry.kind])).toEqual([
      [settled.trackId, 'settled'],
      [lost.trackId, 'overdue'],
    ]);
    expect(await queue.read(10)).toHaveLength(2); // not acknowledged: read again
    await queue.ack(batch.map((m) => m.id));
    expect(await queue.backlog(Date.now())).toEqual({ depth: 0, oldestAgeSeconds: 0 });
  });
});

describe('the ledger queue without a key ring (STORE_ENCRYPTION_KEYS unset)', () => {
  it('carries no upstream data, in Redis or in the process: the ledger keeps none', async () => {
    const client = new Redis(redis.url);
    clients.push(client);
    const keys = new RedisKeys(`clear-${++prefixes}`);
    const clear = new StoreCipher([]);
    const queues = [
      new RedisLedgerQueue(client, keys, clear, prices),
      new MemoryLedgerQueue(prices, new MemoryBudgetStore(), false),
    ];
    for (const queue of queues) {
      const settled = record();
      await queue.settled(settled);
      const [message] = await queue.read(10);
      expect(message.entry).toMatchObject({ trackId: settled.trackId, kind: 'settled' });
      expect(message.entry).not.toHaveProperty('data');
    }
    const stream = await client.xrange(keys.ledger('entries'), '-', '+');
    expect(JSON.stringify(stream)).not.toContain('Ali');
  });
});

/**
 * The inquiry's budget reservation travels with its duty, and the commit or release with its
 * entry (ledger-queue.ts): one atomic operation each, so a duty exists only for an inquiry
 * its budgets admitted, and no inquiry pays a round trip of its own for its budget.
 */
describe.each([
  [
    'redis',
    () => {
      const client = new Redis(redis.url);
      clients.push(client);
      const keys = new RedisKeys(`fused-${++prefixes}`);
      return { queue: new RedisLedgerQueue(client, keys, cipher, prices), budgets: new RedisBudgetStore(client, keys) };
    },
  ],
  [
    'memory',
    () => {
      const budgets = new MemoryBudgetStore();
      return { queue: new MemoryLedgerQueue(prices, budgets), budgets };
    },
  ],
])('the %s ledger queue with a budget', (_name, make) => {
  const now = Date.now();
  const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);
  const reservation = (trackId: string, units = 2): ReserveRequest => ({
    trackId,
    units,
    now,
    concludeAt: now + 60_000,
    windows,
    budgets: [{ name: 'svc-a', daily: 5, monthly: -1 }],
  });
  const daily = async (budgets: BudgetStore) => (await budgets.read(windows, ['svc-a'], now)).get('svc-a|daily');

  it('writes the duty only with an admitted reservation; the entry commits it, a discard releases it', async () => {
    const { queue, budgets } = make();
    const admitted = record({ status: 'pending', deadlineAt: new Date(now - 60_000).toISOString() });
    const refused = record({ status: 'pending', deadlineAt: new Date(now - 60_000).toISOString() });
    expect(await queue.owe(admitted, reservation(admitted.trackId))).toEqual({ admitted: true });
    expect(await queue.owe(refused, reservation(refused.trackId, 4))).toMatchObject({
      admitted: false,
      budget: 'svc-a',
      remaining: 3,
    });
    expect(await daily(budgets)).toEqual({ spent: 0, reserved: 2 });
    // Both are past due: only the admitted one has a duty to become an `unknown` entry.
    expect(await queue.claimOverdue(Date.now(), 10)).toBe(1);
    const [overdue] = await queue.read(10);
    expect(overdue.entry).toMatchObject({ trackId: admitted.trackId, kind: 'overdue', charged: 'possibly' });
    await queue.ack([overdue.id]);

    const settled = record();
    expect(await queue.owe(settled, reservation(settled.trackId))).toEqual({ admitted: true });
    expect(await daily(budgets)).toEqual({ spent: 0, reserved: 2 + 2 });
    await queue.settled(settled, 'commit');
    expect(await daily(budgets)).toEqual({ spent: 2, reserved: 2 });
    const [entry] = await queue.read(10);
    expect(entry.entry).toMatchObject({ trackId: settled.trackId, kind: 'settled' });

    await queue.discard(admitted.trackId, true);
    expect(await daily(budgets)).toEqual({ spent: 2, reserved: 0 });
  });

  it('reserves once per trackId: the same duty written again (re-sent after a reconnect) adds nothing', async () => {
    const { queue, budgets } = make();
    const inquiry = record({ status: 'pending' });
    expect(await queue.owe(inquiry, reservation(inquiry.trackId))).toEqual({ admitted: true });
    expect(await queue.owe(inquiry, reservation(inquiry.trackId))).toEqual({ admitted: true });
    expect(await daily(budgets)).toEqual({ spent: 0, reserved: 2 });
    await queue.settled(inquiry, 'commit');
    expect(await daily(budgets)).toEqual({ spent: 2, reserved: 0 });
  });
});

/**
 * Standalone Redis: the record store writes the duty and the entry in the record's own script
 * (RedisLedgerQueue.createWithRecord / settleWithRecord), the sealed record itself standing for
 * both; the drainer derives the entries from it.
 */
describe('the record and its ledger duty in one script (standalone Redis)', () => {
  it('derives the settled and the overdue entries from sealed records, and a refused reservation writes nothing', async () => {
    const a = replica(`with-record-${++prefixes}`);
    const keys = new RedisKeys(`with-record-${prefixes}`);
    const records = new RedisInquiryStore(a.client, keys, cipher, a.queue);
    expect(records.accountsWithRecord).toBe(true);
    const now = Date.now();
    const inquiry = (overrides: Partial<InquiryRecord>): InquiryRecord => ({
      ...(record() as InquiryRecord),
      fingerprint: 'f'.repeat(64),
      costUnits: 7,
      ...overrides,
    });
    const settled = inquiry({ status: 'pending' });
    const lost = inquiry({ status: 'pending', deadlineAt: new Date(now - 60_000).toISOString() });
    const windows = new BudgetCalendar('UTC', 'gregory').windowsAt(now);
    const budget = (trackId: string): ReserveRequest => ({
      trackId,
      units: 7,
      now,
      concludeAt: now + 60_000,
      windows,
      budgets: [{ name: 'svc-a', daily: 10, monthly: -1 }],
    });
    expect(await records.create(settled, 60, budget(settled.trackId))).toEqual({ admitted: true });
    const refused = inquiry({ status: 'pending' });
    expect(await records.create(refused, 60, budget(refused.trackId))).toMatchObject({ admitted: false });
    expect(await records.get(refused.trackId)).toBeNull();
    await records.create(lost, 60);
    await records.settle({ ...settled, status: 'succeeded', completedAt: new Date().toISOString() }, 60, 'commit');
    const spent = await new RedisBudgetStore(a.client, keys).read(windows, ['svc-a'], now);
    expect(spent.get('svc-a|daily')).toEqual({ spent: 7, reserved: 0 });

    await drainAll(a.drainer);
    const facts = await a.store.facts(settled.trackId);
    expect(facts?.entries).toEqual([
      expect.objectContaining({ kind: 'settled', status: 'succeeded', charged: 'yes', costUnits: 7 }),
    ]);
    expect(facts?.data).toEqual(settled.data);
    expect((await a.store.facts(lost.trackId))?.entries).toEqual([
      expect.objectContaining({ kind: 'overdue', status: 'unknown', charged: 'possibly', costUnits: 7 }),
    ]);
    expect(await a.store.facts(refused.trackId)).toBeNull();
  });
});
