/**
 * Administration of the ledger (docs/api.md §6) on a gateway with OPS_PORT, its ledger on a
 * PostgreSQL server started here: the export streamed as NDJSON or CSV, usage per client and
 * UTC period, reconciliations of a provider's CSV (idempotent, unsent charges counted), and
 * the credential rules (API keys with the ledger scopes only; a JWT is refused).
 */
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { queuedEntry } from './support/ledger-entries.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { SHAHKAR } from './support/fixtures.js';
import { apiKeysWith, callGateway, startGateway, TEST_CLIENTS, type RunningGateway } from './support/gateway.js';
import { parseExposition } from './support/prometheus.js';
import { PostgresServer } from './support/postgres-server.js';
import { freePort } from './support/redis-server.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ADMIN = { clientId: 'finance', key: 'key-finance-0123456789', scopes: ['ledger:read', 'ledger:reconcile'] };
const READER = { clientId: 'support', key: 'key-support-0123456789', scopes: ['ledger:read'] };
const ISSUER = 'https://id.example.test';
/** A mobile number the simulator rejects (422 upstream_rejected, after registering the trackId). */
const REJECTED_MOBILE = '09129999999';

let postgres: PostgresServer;
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let ops: string;
let db: PgLedgerDatabase;
let store: LedgerStore;
let jwt: string;

/** Entries of March 2035, the fixed dates this spec's exports and usage read. */
function entry(overrides: Partial<QueuedEntry>): QueuedEntry {
  return queuedEntry({ createdAt: '2035-03-10T10:00:00.000Z', completedAt: '2035-03-10T10:00:01.000Z', ...overrides });
}

const succeeded = Array.from({ length: 5 }, (_, i) => entry({ createdAt: `2035-03-1${i}T10:00:00.000Z` }));
const failed = entry({ status: 'failed', charged: 'no', clientId: 'svc-b', upstreamCode: 4001 });
const unknown = entry({
  kind: 'overdue',
  status: 'unknown',
  charged: 'possibly',
  clientId: 'svc-b',
  completedAt: undefined,
});
const advanced = entry({
  requestHandlingType: 'advanced',
  costUnits: 3,
  createdAt: '2035-04-02T00:00:00.000Z',
  clientId: 'svc-b',
});

beforeAll(async () => {
  postgres = await PostgresServer.start();
  sim = new UpstreamSimulator();
  await sim.start(0);
  sim.setFieldValidator((_path, body) =>
    body.mobileNumber === REJECTED_MOBILE ? [{ field: 'mobileNumber', message: 'Not a subscriber' }] : [],
  );
  const keys = await generateKeyPair('RS256', { extractable: true });
  const opsPort = await freePort();
  ops = `http://127.0.0.1:${opsPort}`;
  gateway = await startGateway({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(ADMIN, READER),
    OPS_PORT: String(opsPort),
    LEDGER_DATABASE_URL: postgres.url,
    BUDGETS: JSON.stringify([{ clientId: TEST_CLIENTS.full.clientId, daily: 1000 }]),
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: 'verification-gateway',
    JWT_PUBLIC_KEY: await exportSPKI(keys.publicKey),
  });
  jwt = await new SignJWT({ azp: 'finance', scope: 'ledger:read ledger:reconcile kyc:shahkar' })
    .setProtectedHeader({ alg: 'RS256' })
    .setSubject('user-1')
    .setIssuer(ISSUER)
    .setAudience('verification-gateway')
    .setExpirationTime('5m')
    .sign(keys.privateKey);
  db = new PgLedgerDatabase(postgres.url);
  store = new LedgerStore(db, new StoreCipher([{ id: 'k', key: new Secret(Buffer.alloc(32).toString('base64')) }]), 90);
  await store.insert([...succeeded, failed, unknown, advanced]);
});

afterAll(async () => {
  await gateway?.close();
  await db?.close();
  await sim?.stop();
  await postgres?.stop();
});

const admin = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${ops}${path}`, { ...init, headers: { 'x-api-key': init.key ?? ADMIN.key, ...(init.headers ?? {}) } });

describe('credentials', () => {
  it('answers 401 without one, 403 for a JWT or a key without the scope, never on the public port', async () => {
    expect((await fetch(`${ops}/admin/usage?from=2035-03-01&to=2035-04-01`)).status).toBe(401);
    const byJwt = await fetch(`${ops}/admin/usage?from=2035-03-01&to=2035-04-01`, {
      headers: { authorization: `Bearer ${jwt}` },
    });
    expect(byJwt.status).toBe(403);
    expect(byJwt.headers.get('content-type')).toContain('application/problem+json');
    const reader = await admin('/admin/reconciliations', {
      key: READER.key,
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: 'trackId\n',
    });
    expect(reader.status).toBe(403);
    expect(
      (await fetch(`${gateway.url}/admin/usage?from=2035-03-01&to=2035-04-01`, { headers: { 'x-api-key': ADMIN.key } }))
        .status,
    ).toBe(404);
  });

  it('refuses bad dates with a problem', async () => {
    const bad = await admin('/admin/ledger?from=yesterday&to=2035-04-01');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'validation_failed' });
  });
});

describe('GET /admin/ledger', () => {
  it('streams NDJSON by default, filtered by client and status', async () => {
    const all = await admin('/admin/ledger?from=2035-03-01&to=2035-04-01');
    expect(all.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await all.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as QueuedEntry);
    expect(lines.map((l) => l.trackId).sort()).toEqual([...succeeded, failed, unknown].map((e) => e.trackId).sort());
    const svcB = await admin('/admin/ledger?from=2035-03-01&to=2035-04-01&clientId=svc-b&status=unknown');
    expect(
      (await svcB.text())
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as QueuedEntry).trackId),
    ).toEqual([unknown.trackId]);
  });

  it("streams one inquiry's entries by trackId (any case), and refuses a trackId that is not a UUID", async () => {
    const one = await admin(`/admin/ledger?from=2035-03-01&to=2035-04-01&trackId=${unknown.trackId.toUpperCase()}`);
    expect(one.status).toBe(200);
    const lines = (await one.text()).trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as QueuedEntry).trackId)).toEqual([unknown.trackId]);
    const bad = await admin("/admin/ledger?from=2035-03-01&to=2035-04-01&trackId=1'%20OR%20'1'='1");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'validation_failed', errors: [{ field: 'trackId' }] });
  });

  it('answers CSV with a header row on Accept: text/csv', async () => {
    const res = await admin('/admin/ledger?from=2035-04-01&to=2035-05-01', { headers: { accept: 'text/csv' } });
    expect(res.headers.get('content-type')).toContain('text/csv');
    const [header, row, end] = (await res.text()).split('\r\n');
    expect(header).toBe(
      'trackId,kind,clientId,subjectSha256,operation,requestHandlingType,status,charged,costUnits,createdAt,completedAt,upstreamCode,requestId,revision,reusedFrom,unitsSaved,upstreamMessage,unitPrice,currency,resolvedBy',
    );
    expect(row.startsWith(`${advanced.trackId},settled,svc-b,,shahkar,advanced,succeeded,yes,3,`)).toBe(true);
    expect(end).toBe('');
  });
});

describe('GET /admin/usage', () => {
  it('counts per client and UTC month', async () => {
    const res = await admin('/admin/usage?from=2035-03-01&to=2035-05-01&period=month');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      timeZone: 'UTC',
      period: 'month',
      from: '2035-03-01T00:00:00.000Z',
      to: '2035-05-01T00:00:00.000Z',
      usage: [
        {
          clientId: 'svc-a',
          period: '2035-03',
          inquiries: 5,
          succeeded: 5,
          failed: 0,
          unknown: 0,
          unitsSpent: 5,
          reused: 0,
          unitsSaved: 0,
        },
        {
          clientId: 'svc-b',
          period: '2035-03',
          inquiries: 2,
          succeeded: 0,
          failed: 1,
          unknown: 1,
          unitsSpent: 1,
          reused: 0,
          unitsSaved: 0,
        },
        {
          clientId: 'svc-b',
          period: '2035-04',
          inquiries: 1,
          succeeded: 1,
          failed: 0,
          unknown: 0,
          unitsSpent: 3,
          reused: 0,
          unitsSaved: 0,
        },
      ],
    });
  });
});

describe('usage and budgets', () => {
  it('agree for a mix of succeeded and rejected inquiries: a failed one is charged no (rule 9)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
          apiKey: TEST_CLIENTS.full.key,
          json: i % 2 === 0 ? SHAHKAR : { ...SHAHKAR, mobileNumber: REJECTED_MOBILE },
        }),
      ),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([200, 200, 200, 200, 422, 422, 422, 422]);
    const trackIds = answers.map((res) => String(res.body.trackId));
    // The entries reach PostgreSQL through the queue: wait until all eight are written.
    for (;;) {
      const [{ n }] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM ledger_entries WHERE track_id = ANY($1::uuid[])',
        [trackIds],
      );
      if (n === 8) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const rejected = await store.facts(trackIds[1]);
    expect(rejected?.entries[0]).toMatchObject({ status: 'failed', charged: 'no' });
    const budget = await callGateway(gateway.url, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.full.key });
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const usage = (await (await admin(`/admin/usage?from=${today}&to=${tomorrow}`)).json()) as {
      usage: Array<{ clientId: string; unitsSpent: number; failed: number }>;
    };
    const row = usage.usage.find((r) => r.clientId === TEST_CLIENTS.full.clientId);
    expect(row).toMatchObject({ failed: 4, unitsSpent: 4 });
    expect((budget.body.budgets as Array<{ spentUnits: number }>)[0].spentUnits).toBe(row?.unitsSpent);
  }, 60_000);
});

describe('POST /admin/reconciliations', () => {
  it('sorts the list against the ledger, resolves unknowns once, and counts unsent charges', async () => {
    const stranger = randomUUID();
    // The provider charged four of ours (one unknown), one we never sent; not succeeded[4].
    const csv = [
      'amount,trackId',
      ...[...succeeded.slice(0, 3), unknown].map((e) => `1,${e.trackId}`),
      `1,${stranger}`,
    ].join('\n');
    const send = () =>
      admin('/admin/reconciliations?from=2035-03-01&to=2035-04-01', {
        method: 'POST',
        headers: { 'content-type': 'text/csv' },
        body: `${csv}\n`,
      });
    const first = await send();
    expect(first.status).toBe(200);
    const report = (await first.json()) as Record<string, { count: number; trackIds: string[] }>;
    expect(report.resolved).toMatchObject({ count: 1, trackIds: [unknown.trackId] });
    expect(report.chargedNotInLedger).toMatchObject({ count: 1, trackIds: [stranger] });
    expect(report.chargedAndRecorded.count).toBe(3);
    expect(report.recordedNotCharged.trackIds).toContain(succeeded[4].trackId);
    const facts = await store.facts(unknown.trackId);
    expect(facts?.entries.map((e) => [e.kind, e.status, e.charged])).toEqual([
      ['overdue', 'unknown', 'possibly'],
      ['reconciled', 'succeeded', 'yes'],
    ]);
    const metrics = parseExposition(await (await fetch(`${ops}/metrics`)).text());
    expect(metrics.value('vgw_reconciliation_unsent_charges_total')).toBe(1);

    const [{ n: before }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
    const second = (await (await send()).json()) as Record<string, { count: number }>;
    expect(second.resolved.count).toBe(0);
    expect(second.chargedAndRecorded.count).toBe(4);
    const [{ n: after }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
    expect(after).toBe(before);
    // The same unsent charge found again is not counted again.
    const again = parseExposition(await (await fetch(`${ops}/metrics`)).text());
    expect(again.value('vgw_reconciliation_unsent_charges_total')).toBe(1);
  });

  it('refuses an empty body, a header-only file and JSON sent as CSV, and a dry run writes nothing (issue 33)', async () => {
    const unknowns = ['2037-05-02', '2037-05-03'].map((day) =>
      entry({
        kind: 'overdue',
        status: 'unknown',
        charged: 'possibly',
        completedAt: undefined,
        createdAt: `${day}T10:00:00.000Z`,
      }),
    );
    await store.insert(unknowns);
    const reconcile = (body: string, query = '') =>
      admin(`/admin/reconciliations?from=2037-05-01&to=2037-06-01${query}`, {
        method: 'POST',
        headers: { 'content-type': 'text/csv' },
        body,
      });
    const count = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries'))[0].n;
    const before = await count();
    for (const body of ['', 'trackId\n', JSON.stringify({ trackIds: [unknowns[0].trackId] })]) {
      const res = await reconcile(body);
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([400, 'validation_failed']);
    }
    expect(await count()).toBe(before);
    const dry = await reconcile(`trackId\n${unknowns[0].trackId}\n`, '&dryRun=true');
    expect(dry.status).toBe(200);
    expect(await dry.json()).toMatchObject({
      dryRun: true,
      resolved: { count: 1, trackIds: [unknowns[0].trackId] },
      resolvedNotCharged: { count: 1, trackIds: [unknowns[1].trackId] },
    });
    expect(await count()).toBe(before);
  });

  it('refuses a file without a trackId column', async () => {
    const res = await admin('/admin/reconciliations', {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: 'id\nx\n',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'validation_failed' });
  });
});

describe('a hundred thousand entries', () => {
  const many = Array.from({ length: 100_000 }, (_, i) =>
    entry({ createdAt: new Date(Date.UTC(2036, 0, 1) + i * 1000).toISOString(), clientId: `svc-${i % 3}` }),
  );

  beforeAll(async () => {
    for (let i = 0; i < many.length; i += 10_000) await store.insert(many.slice(i, i + 10_000));
  });

  it('exports them streamed, each once, in bounded memory', async () => {
    // Live heap, not garbage: measured after a collection, every 100 chunks read.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const res = await admin('/admin/ledger?from=2036-01-01&to=2036-02-01');
    let lines = 0;
    let chunks = 0;
    let peak = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      for (const byte of chunk) if (byte === 10) lines += 1;
      if (++chunks % 100 === 0) {
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed - heapBefore);
      }
    }
    expect(lines).toBe(many.length);
    // Server and reader share this process; the whole export weighs ~35 MiB of text (and far
    // more as objects): a few pages in flight at most.
    expect(peak).toBeLessThan(24 * 2 ** 20);
  });

  it('reconciles a list of them streamed', async () => {
    const body = ['trackId', ...many.map((e) => e.trackId)].join('\n');
    const res = await admin('/admin/reconciliations?from=2036-01-01&to=2036-02-01', {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body,
    });
    expect(res.status).toBe(200);
    const report = (await res.json()) as Record<string, { count: number; trackIds: string[]; truncated: boolean }>;
    expect(report.rows).toBe(many.length);
    expect(report.chargedAndRecorded).toMatchObject({ count: many.length, truncated: true });
    expect(report.chargedAndRecorded.trackIds).toHaveLength(1_000);
    expect(report.chargedNotInLedger.count).toBe(0);
    expect(report.recordedNotCharged.count).toBe(0);
  });
});

describe('GET /admin/ledger/parked', () => {
  it('shows an entry the database refused, with its SQLSTATE and its JSON escaped; API keys with ledger:read only', async () => {
    const refused = entry({ clientId: 'jwt:app\ud800', requestId: 'req-\u0000' });
    const since = new Date(Date.now() - 1_000).toISOString();
    await new ParkedEntries(store).park(refused, { code: '22P02', message: 'invalid input syntax for type json' });
    const until = new Date(Date.now() + 60_000).toISOString();

    const res = await admin(`/admin/ledger/parked?from=${since}&to=${until}`, { key: READER.key });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { parked: Array<Record<string, string>>; truncated: boolean };
    expect(body.truncated).toBe(false);
    const row = body.parked.find((p) => p.trackId === refused.trackId);
    expect(row).toMatchObject({ kind: 'settled', requestId: 'req-\\u0000', code: '22P02' });
    expect(row?.message).toBe('invalid input syntax for type json');
    // The entry as the queue held it: the lone surrogate and the NUL as \u escapes, nothing lost.
    expect(row?.entry).toContain('"clientId":"jwt:app\\ud800"');
    expect(JSON.parse(row!.entry)).toEqual(refused);

    const window = `from=${since}&to=${until}`;
    expect((await fetch(`${ops}/admin/ledger/parked?${window}`)).status).toBe(401);
    expect(
      (await fetch(`${ops}/admin/ledger/parked?${window}`, { headers: { authorization: `Bearer ${jwt}` } })).status,
    ).toBe(403);
    expect((await admin('/admin/ledger/parked?from=yesterday&to=2035-04-01')).status).toBe(400);
    expect((await admin(`/admin/ledger/parked?from=2035-03-01&to=2035-04-01`)).status).toBe(200);
    const publicPort = await fetch(`${gateway.url}/admin/ledger/parked?${window}`, {
      headers: { 'x-api-key': ADMIN.key },
    });
    expect(publicPort.status).toBe(404);
  });
});

describe('POST /admin/ledger/parked/{id}/redrive and /discard', () => {
  it('re-drives with who and why on the ops listener (ledger:reconcile), replays it, and answers the other decision 409', async () => {
    const good = entry({ createdAt: '2035-03-20T10:00:00.000Z' });
    const since = new Date(Date.now() - 1_000).toISOString();
    await new ParkedEntries(store).park(good, { code: '23514', message: 'a constraint since relaxed' });
    const listed = await admin(`/admin/ledger/parked?from=${since}&to=${new Date(Date.now() + 60_000).toISOString()}`);
    const row = (
      (await listed.json()) as { parked: Array<{ id: string; trackId: string; handled: unknown }> }
    ).parked.find((p) => p.trackId === good.trackId)!;
    expect(row.handled).toBeNull();
    const act = (action: string, body: unknown, key = ADMIN.key, base = ops) =>
      fetch(`${base}/admin/ledger/parked/${row.id}/${action}`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    expect((await act('redrive', { reason: 'fixed' }, READER.key)).status).toBe(403);
    expect((await act('redrive', { reason: 'fixed' }, ADMIN.key, gateway.url)).status).toBe(404);
    const noReason = await act('redrive', { why: 'x' });
    expect(noReason.status).toBe(400);
    expect(await noReason.json()).toMatchObject({ code: 'validation_failed', errors: [{ field: 'why' }] });

    const first = await act('redrive', { reason: 'the constraint was relaxed' });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({
      action: 'redriven',
      by: ADMIN.clientId,
      written: true,
      replayed: false,
    });
    expect((await store.facts(good.trackId))?.entries).toHaveLength(1);
    const again = await act('redrive', { reason: 'the constraint was relaxed' });
    expect(await again.json()).toMatchObject({ replayed: true });

    const other = await act('discard', { reason: 'not ours' });
    expect(other.status).toBe(409);
    expect(other.headers.get('content-type')).toContain('application/problem+json');
    expect(await other.json()).toMatchObject({
      code: 'parked_entry_handled',
      detail: expect.stringContaining('finance'),
    });
    expect(await act('discard', { reason: 'x' }).then((r) => r.status)).toBe(409);
    expect(
      (
        await fetch(`${ops}/admin/ledger/parked/${'f'.repeat(64)}/discard`, {
          method: 'POST',
          headers: { 'x-api-key': ADMIN.key, 'content-type': 'application/json' },
          body: '{"reason":"x"}',
        })
      ).status,
    ).toBe(404);
  });
});
