/**
 * The webhook outbox (ledger migration 10, src/webhooks/webhook-outbox.ts) on both engines, the
 * same SQL: events written by the statement that writes their facts (only for entries newly
 * written, only to subscribed endpoints), claims that two workers never share (FOR UPDATE SKIP
 * LOCKED), outcomes written only under the claim's lease, a threshold once per key, a parked
 * entry told to the operators' endpoints.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { WebhookOutbox } from '../src/webhooks/webhook-outbox.js';
import type { WebhookEndpoint } from '../src/config/webhooks-config.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { queuedEntry } from './support/ledger-entries.js';
import { PostgresServer } from './support/postgres-server.js';

const endpoint = (id: string, clientId: string, events: WebhookEndpoint['events']): WebhookEndpoint => ({
  id,
  clientId,
  url: new Secret(`https://hooks.example.com/${id}`),
  keys: [new Secret(Buffer.alloc(32, 1).toString('base64'))],
  events,
});

const ENDPOINTS = [
  endpoint('mine', 'svc-a', ['inquiry.settled', 'inquiry.resolved', 'budget.threshold']),
  endpoint('ops', '*', ['ledger.parked']),
  endpoint('lease', 'svc-lease', ['inquiry.settled']),
];

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(ledgerEngines(() => server.url, 'webhook-outbox'))('the webhook outbox on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  let outbox: WebhookOutbox;
  beforeAll(async () => {
    db = await open();
    store = new LedgerStore(db, new StoreCipher([]), 90);
    outbox = new WebhookOutbox(store);
    await outbox.syncEndpoints(ENDPOINTS, { configChanged: true });
  });
  afterAll(async () => {
    await closeLedger(db);
  });

  it('writes an event with each newly written entry, to the endpoints that subscribe, and none for a rewrite', async () => {
    const settled = queuedEntry();
    const resolved = queuedEntry({ kind: 'reconciled', status: 'failed', charged: 'no' });
    const elsewhere = queuedEntry({ clientId: 'svc-b' });
    expect(await store.insert([settled, resolved, elsewhere])).toBe(3);
    expect(await store.insert([settled])).toBe(0);
    const rows = await db.query<{ type: string; endpoint_id: string; data: Record<string, unknown> }>(
      'SELECT type, endpoint_id, data FROM webhook_deliveries WHERE data->>$1 IS NOT NULL ORDER BY type',
      ['trackId'],
    );
    expect(rows).toEqual([
      {
        type: 'inquiry.resolved',
        endpoint_id: 'mine',
        data: {
          trackId: resolved.trackId,
          operation: 'shahkar',
          status: 'failed',
          charged: 'no',
          completedAt: resolved.completedAt,
        },
      },
      {
        type: 'inquiry.settled',
        endpoint_id: 'mine',
        data: {
          trackId: settled.trackId,
          operation: 'shahkar',
          status: 'succeeded',
          charged: 'yes',
          completedAt: settled.completedAt,
        },
      },
    ]);
  });

  it('gives two concurrent claims different rows, and writes an outcome only under its own lease', async () => {
    await store.insert([queuedEntry(), queuedEntry()]);
    const [first, second] = await Promise.all([outbox.claim('mine', 2, 30_000), outbox.claim('mine', 2, 30_000)]);
    const ids = [...first, ...second].map((claim) => claim.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const claim = first[0] ?? second[0];
    expect(
      await outbox.settle({ ...claim, leaseToken: '00000000-0000-4000-8000-000000000000' }, { status: 'dead' }),
    ).toBe(false);
    expect(await outbox.settle(claim, { status: 'delivered', httpStatus: 204 })).toBe(true);
    expect(await outbox.settle(claim, { status: 'dead' })).toBe(false);
  });

  it("leaves a claim whose lease ran out (its replica died mid-delivery) to another, and the dead one's failure is dropped", async () => {
    await store.insert([queuedEntry({ clientId: 'svc-lease' })]);
    const [dying] = await outbox.claim('lease', 1, 0);
    const [taker] = await outbox.claim('lease', 1, 30_000);
    expect(taker).toMatchObject({ id: dying.id, attempt: dying.attempt + 1 });
    expect(await outbox.settle(dying, { status: 'pending', retryInMs: 1_000, error: 'UND_ERR_SOCKET' })).toBe(false);
    expect(await outbox.settle(taker, { status: 'delivered' })).toBe(true);
  });

  it("does not let an operator's retry free a row under a live lease: no second replica sends it at the same time", async () => {
    await store.insert([queuedEntry({ clientId: 'svc-lease' })]);
    const [live] = await outbox.claim('lease', 1, 30_000);
    expect(await outbox.retry(live.id)).toMatchObject({ id: live.id, status: 'pending' });
    expect(await outbox.claim('lease', 1, 30_000)).toEqual([]);
    expect(await outbox.settle(live, { status: 'delivered', httpStatus: 204 })).toBe(true);
  });

  it('keeps a 2xx that arrives after its lease ran out: the failure of the attempt that took over does not overwrite it', async () => {
    await store.insert([queuedEntry({ clientId: 'svc-lease' })]);
    const [slow] = await outbox.claim('lease', 1, 0);
    const [taker] = await outbox.claim('lease', 1, 30_000);
    expect(await outbox.settle(slow, { status: 'delivered', httpStatus: 200 })).toBe(true);
    expect(await outbox.settle(taker, { status: 'pending', retryInMs: 1_000, error: 'HTTP 500' })).toBe(false);
    const [row] = await db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE id = $1', [slow.id]);
    expect(row.status).toBe('delivered');
  });

  it('writes a batch of outcomes in one statement, each under its own lease, and returns the ids written', async () => {
    await store.insert([queuedEntry({ clientId: 'svc-lease' }), queuedEntry({ clientId: 'svc-lease' })]);
    const [kept, lost] = await outbox.claim('lease', 2, 30_000);
    const written = await outbox.settleMany([
      { claim: kept, outcome: { status: 'pending', retryInMs: 60_000, httpStatus: 503, error: 'HTTP 503' } },
      { claim: { ...lost, leaseToken: '00000000-0000-4000-8000-000000000000' }, outcome: { status: 'dead' } },
    ]);
    expect(written).toEqual(new Set([kept.id]));
    const rows = await db.query<{ id: string; status: string; last_status: number | null; due_in: number }>(
      `SELECT id, status, last_status, extract(epoch FROM next_attempt_at - now())::float8 AS due_in
       FROM webhook_deliveries WHERE id = ANY($1::uuid[])`,
      [[kept.id, lost.id]],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(kept.id)).toMatchObject({ status: 'pending', last_status: 503 });
    expect(byId.get(kept.id)!.due_in).toBeGreaterThan(50);
    expect(byId.get(lost.id)).toMatchObject({ status: 'pending', last_status: null });
    expect(await outbox.settleMany([])).toEqual(new Set());
  });

  it('keeps the endpoints another replica configures when one with a different configuration mirrors its own', async () => {
    const newer = endpoint('newer', 'svc-newer', ['inquiry.settled']);
    await outbox.syncEndpoints([...ENDPOINTS, newer], { configChanged: true });
    // A replica still on the older configuration (restarted mid-rollout) mirrors it.
    await outbox.syncEndpoints(ENDPOINTS, { configChanged: true });
    await store.insert([queuedEntry({ clientId: 'svc-newer' })]);
    expect(await outbox.claim('newer', 4, 30_000)).toHaveLength(1);
    // An endpoint no replica configures any more is forgotten once its heartbeats stop.
    await outbox.syncEndpoints(ENDPOINTS, { configChanged: false, forgetAfterMs: 0 });
    await store.insert([queuedEntry({ clientId: 'svc-newer' })]);
    expect(await outbox.claim('newer', 4, 30_000)).toHaveLength(0);
  });

  it('keeps an endpoint a 410 disabled off until its configuration changes', async () => {
    const gone = endpoint('gone', 'svc-gone', ['inquiry.settled']);
    const others = ENDPOINTS;
    await outbox.syncEndpoints([...others, gone], { configChanged: true });
    await outbox.disable('gone');
    await outbox.syncEndpoints([...others, gone], { configChanged: true });
    expect(await outbox.disabledEndpoints()).toEqual(new Set(['gone']));
    await store.insert([queuedEntry({ clientId: 'svc-gone' })]);
    expect(await outbox.claim('gone', 4, 30_000)).toEqual([]);
    // While disabled, no event is written for it: the outbox does not grow for a receiver that left.
    await store.insert([queuedEntry({ clientId: 'svc-gone' })]);
    await outbox.syncEndpoints([...others, { ...gone, url: new Secret('https://hooks.example.com/moved') }], {
      configChanged: true,
    });
    expect(await outbox.disabledEndpoints()).toEqual(new Set());
    expect(await outbox.claim('gone', 4, 30_000)).toHaveLength(0);
    await store.insert([queuedEntry({ clientId: 'svc-gone' })]);
    expect(await outbox.claim('gone', 4, 30_000)).toHaveLength(1);
  });

  it("prunes what waits on a disabled endpoint once it is as old as a dead row, and nothing of an enabled one's", async () => {
    const left = endpoint('left', 'svc-left', ['inquiry.settled']);
    const kept = endpoint('kept', 'svc-kept', ['inquiry.settled']);
    await outbox.syncEndpoints([...ENDPOINTS, left, kept], { configChanged: true });
    await store.insert([queuedEntry({ clientId: 'svc-left' }), queuedEntry({ clientId: 'svc-kept' })]);
    await outbox.disable('left');
    const waiting = () =>
      db.query<{ endpoint_id: string }>(
        "SELECT endpoint_id FROM webhook_deliveries WHERE endpoint_id IN ('left', 'kept') ORDER BY endpoint_id",
      );
    await outbox.prune(3_600_000, 30 * 86_400_000);
    expect(await waiting()).toEqual([{ endpoint_id: 'kept' }, { endpoint_id: 'left' }]);
    await db.query(
      "UPDATE webhook_deliveries SET occurred_at = now() - interval '31 days' WHERE endpoint_id IN ('left', 'kept')",
    );
    await outbox.prune(3_600_000, 30 * 86_400_000);
    expect(await waiting()).toEqual([{ endpoint_id: 'kept' }]);
  });

  it('writes a threshold once per key, and a parked entry to the operators only', async () => {
    const data = { budget: 'svc-a', window: 'daily', threshold: 80 };
    const written = await Promise.all([1, 2, 3].map(() => outbox.recordThreshold('svc-a:daily:x:80', 'svc-a', data)));
    expect(written.filter(Boolean)).toHaveLength(1);
    await new ParkedEntries(store).park(queuedEntry({ trackId: 'not-a-uuid' }), { code: '22P02', message: 'bad uuid' });
    const parked = await db.query<{ endpoint_id: string; data: Record<string, unknown> }>(
      "SELECT endpoint_id, data FROM webhook_deliveries WHERE type = 'ledger.parked'",
    );
    expect(parked).toEqual([
      { endpoint_id: 'ops', data: expect.objectContaining({ trackId: 'not-a-uuid', kind: 'settled', code: '22P02' }) },
    ]);
  });

  it('keeps a delivered threshold past the retention while its window lasts: a restarted replica does not tell it twice', async () => {
    const resetsAt = new Date(Date.now() + 86_400_000).toISOString();
    const data = { budget: 'svc-a', window: 'monthly', threshold: 80, resetsAt };
    const key = `svc-a:monthly:${resetsAt}:80`;
    expect(await outbox.recordThreshold(key, 'svc-a', data)).toBe(true);
    await db.query(
      "UPDATE webhook_deliveries SET status = 'delivered', finished_at = now() - interval '4 days' WHERE event_key = $1",
      [`budget.threshold:${key}`],
    );
    await outbox.prune(3_600_000, 30 * 86_400_000);
    // A replica started after the pruning has told nothing yet (BudgetThresholds.told is its memory).
    expect(await outbox.recordThreshold(key, 'svc-a', data)).toBe(false);
  });
});
