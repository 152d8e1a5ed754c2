/**
 * Operations the operator adds (docs/api.md §10, issue 42), end to end on Redis and the run's
 * PostgreSQL against the simulator: three added operations covering the nine field types,
 * accepted (as normalised upstream), refused (nothing sent, nothing charged), scopes, 404,
 * Idempotency-Key, Prefer: respond-async, reuse, the ledger, metrics, and no field value in the
 * logs (debug), metric labels, trace attributes, Redis keys, Redis values (sealed under a key
 * ring), ledger rows or the ledger's NDJSON and CSV exports; the live /docs-json describing them,
 * Redocly-clean.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { SpanRecorder } from './support/span-recorder.js';
import { Redis } from 'ioredis';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';
import { CapturedLog } from './support/captured-log.js';
import { nextEvent } from './support/events.js';
import { untilEntriesWritten } from './support/ledger-entries.js';
import { RedisServer } from './support/redis-server.js';
import {
  TEST_CLIENTS,
  apiKeysWith,
  callGateway,
  startGateway,
  untilStoreReady,
  type RunningGateway,
} from './support/gateway.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const OPERATIONS = [
  {
    name: 'card-to-iban',
    upstreamPath: '/api/v5/KYC/CardToIban',
    fields: { cardNumber: { type: 'cardNumber' } },
    advanced: false,
    description: 'The IBAN behind a bank card',
  },
  {
    name: 'iban-ownership',
    upstreamPath: '/api/v5/KYC/IbanOwnership',
    fields: { iban: { type: 'iban' }, nationalCode: { type: 'nationalCode' }, birthDate: { type: 'persianDate' } },
  },
  {
    name: 'address-check',
    upstreamPath: '/api/v5/KYC/AddressCheck',
    fields: {
      postalCode: { type: 'postalCode' },
      mobile: { type: 'mobile' },
      kind: { type: 'enum', values: ['home', 'work'] },
      reference: { type: 'digits', minLength: 4, maxLength: 8 },
      note: { type: 'text', maxLength: 20, optional: true },
    },
  },
];
const PRICES = {
  shahkar: { standard: 1, advanced: 3 },
  iban: { standard: 1, advanced: 3 },
  'card-to-iban': { standard: 2 },
  'iban-ownership': { standard: 2, advanced: 4 },
  'address-check': { standard: 1, advanced: 2 },
};
const ADDED = {
  clientId: 'app-added',
  key: 'key-added-0123456789',
  scopes: ['kyc:card-to-iban', 'kyc:iban-ownership', 'kyc:address-check', 'inquiries:read', 'kyc:advanced'],
};
const OPERATOR = { clientId: 'ops-added', key: 'key-ops-added-0123456789', scopes: ['ledger:read'] };
const HMAC = 'reuse-hmac-key-0123456789abcdef0123456789';

/** Values written the way people type them, and as they must reach the upstream. */
const CARD = { typed: '۶۰۳۷-۹۹۰۰ ۰۰۰۰ ۰۰۰۶', sent: '6037990000000006' };
const IBAN = { typed: 'ir06 2960 0000 0010 0324 2000 01', sent: 'IR062960000000100324200001' };
const CODE = { typed: '۰۴۹۹۳۷۰۸۹۹', sent: '0499370899' };
const BIRTH = { typed: '1403-12-30', sent: '1403/12/30' };
const POSTAL = { typed: '13145-76543', sent: '1314576543' };
const MOBILE = { typed: '+98 912 123 4567', sent: '09121234567' };

let redis: RedisServer;
const spans = new SpanRecorder();
let sim: UpstreamSimulator;
let gateway: RunningGateway;
let redisClient: Redis;
let db: PgLedgerDatabase;
const log = new CapturedLog();
const trackIds: string[] = [];

beforeAll(async () => {
  redis = await RedisServer.start();
  sim = new UpstreamSimulator({ credit: 1_000_000, addedOperationPaths: OPERATIONS.map((o) => o.upstreamPath) });
  await sim.start(0);
  gateway = await startGateway(
    {
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: 'added-ops',
      API_KEYS: apiKeysWith(ADDED, OPERATOR),
      INQUIRY_OPERATIONS: JSON.stringify(OPERATIONS),
      INQUIRY_PRICES: JSON.stringify(PRICES),
      INQUIRY_REUSE: JSON.stringify({ 'iban-ownership': { maxAgeSeconds: 600, share: 'client' } }),
      REUSE_HMAC_KEY: HMAC,
      LOG_LEVEL: 'debug',
      // Sealed at rest, as deployed: no field value in clear in any Redis value.
      STORE_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_BSP_SCHEDULE_DELAY: '20',
    },
    { logger: log, spanExporter: spans },
  );
  await untilStoreReady(gateway, 15_000);
  redisClient = new Redis(redis.url);
  db = new PgLedgerDatabase(process.env.VGW_TEST_LEDGER_DATABASE_URL ?? 'postgres://run-postgres-missing');
  await migrate(db);
});

afterAll(async () => {
  await gateway?.close();
  redisClient?.disconnect();
  await db?.close();
  await sim?.stop();
  await redis?.stop();
});

/** A Redis key's value as text, whatever its type. */
async function redisValue(key: string): Promise<string> {
  switch (await redisClient.type(key)) {
    case 'string':
      return (await redisClient.getBuffer(key))?.toString('latin1') ?? '';
    case 'hash':
      return JSON.stringify(await redisClient.hgetall(key));
    case 'list':
      return JSON.stringify(await redisClient.lrange(key, 0, -1));
    case 'set':
      return JSON.stringify(await redisClient.smembers(key));
    case 'zset':
      return JSON.stringify(await redisClient.zrange(key, '0', '-1'));
    case 'stream':
      return JSON.stringify(await redisClient.xrange(key, '-', '+'));
    default:
      return '';
  }
}

const ask = (name: string, json: unknown, headers: Record<string, string> = {}, apiKey = ADDED.key) =>
  callGateway(gateway.url, 'POST', `/v1/kyc/${name}`, { apiKey, json, headers });

describe('accepted and normalised', () => {
  it('sends every type normalised upstream and answers with the upstream data', async () => {
    const cases: [string, Record<string, string>, Record<string, string>][] = [
      ['card-to-iban', { cardNumber: CARD.typed }, { cardNumber: CARD.sent }],
      [
        'iban-ownership',
        { iban: IBAN.typed, nationalCode: CODE.typed, birthDate: BIRTH.typed },
        { iban: IBAN.sent, nationalCode: CODE.sent, birthDate: BIRTH.sent },
      ],
      [
        'address-check',
        { postalCode: POSTAL.typed, mobile: MOBILE.typed, kind: ' work ', reference: '۱۲ ۳۴-۵', note: ' e\u0301 ' },
        { postalCode: POSTAL.sent, mobile: MOBILE.sent, kind: 'work', reference: '12345', note: '\u00e9' },
      ],
    ];
    for (const [name, typed, sent] of cases) {
      const answer = await ask(name, typed);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'succeeded', data: { input: sent, matched: true } });
      const request = sim.requests.at(-1);
      expect(request?.path).toBe(OPERATIONS.find((o) => o.name === name)?.upstreamPath);
      expect(request?.body).toEqual({ ...sent, trackId: answer.body.trackId, requestHandlingType: 'standard' });
      trackIds.push(answer.body.trackId as string);
      const record = await callGateway(gateway.url, 'GET', `/v1/inquiries/${answer.body.trackId as string}`, {
        apiKey: ADDED.key,
      });
      expect(record.body).toMatchObject({ operation: name, status: 'succeeded' });
    }
  });
});

describe('refused before any credit', () => {
  it.each([
    ['card-to-iban', { cardNumber: '6037990000000007' }, ['cardNumber']],
    [
      'iban-ownership',
      { iban: 'IR062960000000100324200002', nationalCode: '0499370898', birthDate: '1404/12/30' },
      ['iban', 'nationalCode', 'birthDate'],
    ],
    [
      'address-check',
      { postalCode: '13145-765-43', mobile: '0812123456', kind: 'Home', reference: '123', note: 'a\nb' },
      ['postalCode', 'mobile', 'kind', 'reference', 'note'],
    ],
    [
      'address-check',
      { postalCode: POSTAL.typed, mobile: MOBILE.typed, kind: 'home', reference: '1234', trackId: 'x', extra: 1 },
      ['trackId', 'extra'],
    ],
    ['iban-ownership', { iban: IBAN.typed, birthDate: 1403 }, ['nationalCode', 'birthDate']],
    ['card-to-iban', { cardNumber: CARD.typed, requestHandlingType: 'advanced' }, ['requestHandlingType']],
  ])('%s %j: 400, one error per bad field, nothing sent', async (name, body, fields) => {
    const before = sim.inquiryCalls;
    const answer = await ask(name, body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('validation_failed');
    expect((answer.body.errors as { field: string }[]).map((e) => e.field).sort()).toEqual([...fields].sort());
    expect(sim.inquiryCalls).toBe(before);
  });

  it('answers 404 to a name not in the catalog (before the credential), 401 without one, 403 without its scope', async () => {
    expect((await ask('no-such-op', { a: '1' }, {}, '')).status).toBe(404);
    expect((await callGateway(gateway.url, 'GET', '/v1/kyc/no-such-op')).status).toBe(404);
    const wrong = await callGateway(gateway.url, 'GET', '/v1/kyc/card-to-iban');
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'POST']);
    expect(
      (await callGateway(gateway.url, 'POST', '/v1/kyc/card-to-iban', { json: { cardNumber: CARD.typed } })).status,
    ).toBe(401);
    const forbidden = await ask('card-to-iban', { cardNumber: CARD.typed }, {}, TEST_CLIENTS.full.key);
    expect([forbidden.status, forbidden.body.code]).toEqual([403, 'forbidden']);
  });
});

describe('the built-ins’ steps', () => {
  it('replays an Idempotency-Key and answers Prefer: respond-async with 202', async () => {
    const body = { cardNumber: CARD.typed };
    const first = await ask('card-to-iban', body, { 'idempotency-key': 'added-op-key-1' });
    const calls = sim.inquiryCalls;
    const again = await ask('card-to-iban', body, { 'idempotency-key': 'added-op-key-1' });
    expect([again.status, again.body.trackId, again.headers.get('idempotent-replayed')]).toEqual([
      200,
      first.body.trackId,
      'true',
    ]);
    expect(sim.inquiryCalls).toBe(calls);
    const async = await ask('card-to-iban', body, { prefer: 'respond-async' });
    expect([202, 200]).toContain(async.status);
    trackIds.push(first.body.trackId as string, async.body.trackId as string);
  });

  it('reuses an answer to the same normalised question, whatever digits it was written in', async () => {
    const written = { iban: IBAN.sent, nationalCode: '0499370899', birthDate: '1403/12/30' };
    const fresh = await ask('iban-ownership', written, { 'cache-control': 'max-age=600' });
    const reused = await ask(
      'iban-ownership',
      { iban: IBAN.typed, nationalCode: CODE.typed, birthDate: BIRTH.typed },
      { 'cache-control': 'max-age=600' },
    );
    expect(reused.status).toBe(200);
    expect(reused.body.reusedFrom).toBe(fresh.body.trackId);
    trackIds.push(fresh.body.trackId as string, reused.body.trackId as string);
  });

  it('writes ledger entries under the operation’s name and its price, and labels metrics by name from start-up', async () => {
    await untilEntriesWritten(db, trackIds, { inquiries: trackIds.length });
    const rows = await db.query<{ operation: string; cost_units: number }>(
      'SELECT operation, cost_units FROM ledger_entries WHERE track_id = $1',
      [trackIds[0]],
    );
    expect(rows[0]).toMatchObject({ operation: 'card-to-iban', cost_units: 2 });
    const metrics = await callGateway(gateway.url, 'GET', '/metrics');
    expect(metrics.text).toMatch(/vgw_inquiries_total\{operation="address-check",status="unknown"\} 0/);
    expect(metrics.text).toMatch(/vgw_inquiries_total\{operation="card-to-iban",status="succeeded"\} [1-9]/);
  });
});

describe('the names the catalog holds', () => {
  it('opens the caller’s budget view to an added operation’s scope, and lists the catalog in /admin/status', async () => {
    expect((await callGateway(gateway.url, 'GET', '/v1/budget', { apiKey: ADDED.key })).status).toBe(200);
    const status = await callGateway(gateway.url, 'GET', '/admin/status', { apiKey: OPERATOR.key });
    expect(status.body.operations).toEqual(['shahkar', 'iban', ...OPERATIONS.map((o) => o.name)]);
  });
});

describe('personal data', () => {
  it('finds no field value in log lines (debug), metrics, trace attributes, Redis keys or values, ledger rows or exports', async () => {
    await untilEntriesWritten(db, trackIds, { inquiries: trackIds.length });
    const values = [CARD.sent, IBAN.sent, CODE.sent, POSTAL.sent, MOBILE.sent, '6037-9900', '1403/12/30', '1314576543'];
    // Spans end in order: once this request's span is exported, every earlier one is.
    const last = nextEvent<ReadableSpan>(
      spans,
      'span',
      (span) => span.kind === SpanKind.SERVER && span.attributes['vgw.request_id'] === 'added-last',
      5000,
    );
    await callGateway(gateway.url, 'GET', '/health/live', { headers: { 'x-request-id': 'added-last' } });
    await last;
    const attributes = JSON.stringify(spans.spans.map((span) => [span.name, span.attributes]));
    const keys = await redisClient.keys('*');
    const stored = await Promise.all(keys.map((key) => redisValue(key)));
    // The records (with the upstream's data, which echoes the fields) are there, sealed.
    expect(stored.filter((value) => value.startsWith('enc:v1:k1:')).length).toBeGreaterThanOrEqual(trackIds.length);
    const rows = JSON.stringify(
      await db.query('SELECT * FROM ledger_entries WHERE track_id = ANY($1::uuid[])', [trackIds]),
    );
    const day = new Date().toISOString().slice(0, 10);
    const range = `from=${day}&to=${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}`;
    const exports = await Promise.all(
      ['application/x-ndjson', 'text/csv'].map(async (accept) => {
        const answer = await callGateway(gateway.url, 'GET', `/admin/ledger?${range}&clientId=${ADDED.clientId}`, {
          apiKey: OPERATOR.key,
          headers: { accept },
        });
        expect(answer.status).toBe(200);
        return answer.text;
      }),
    );
    expect(exports.every((text) => text.includes(trackIds[0]))).toBe(true);
    const metrics = (await callGateway(gateway.url, 'GET', '/metrics')).text;
    for (const value of values) {
      const where = { value, log: log.lines.filter((line) => line.includes(value)) };
      expect(where).toEqual({ value, log: [] });
      expect({ value, in: 'trace attributes', found: attributes.includes(value) }).toMatchObject({ found: false });
      expect({ value, in: 'Redis keys', found: keys.some((key) => key.includes(value)) }).toMatchObject({
        found: false,
      });
      expect({ value, in: 'Redis values', found: stored.some((v) => v.includes(value)) }).toMatchObject({
        found: false,
      });
      expect({ value, in: 'ledger rows', found: rows.includes(value) }).toMatchObject({ found: false });
      expect({ value, in: 'ledger exports', found: exports.some((text) => text.includes(value)) }).toMatchObject({
        found: false,
      });
      expect({ value, in: 'metrics', found: metrics.includes(value) }).toMatchObject({ found: false });
    }
  });
});

describe('the catalog bounds what a request can reach (review of issue 42)', () => {
  it('a name not in the catalog, however written, is a 404 that echoes nothing and creates no metric series', async () => {
    for (const path of ['/v1/kyc/no-such-op-4711', '/v1/kyc/%2e%2e%2fno-such-op-4711', '/v1/kyc/CARD-TO-IBAN']) {
      const answer = await callGateway(gateway.url, 'POST', path, {
        apiKey: ADDED.key,
        json: { cardNumber: CARD.typed },
      });
      expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
      expect(answer.text).not.toContain('4711');
      expect(answer.text).not.toContain(CARD.sent);
    }
    const metrics = (await callGateway(gateway.url, 'GET', '/metrics')).text;
    expect(metrics).not.toMatch(/no-such-op|CARD-TO-IBAN/);
  });

  it('answers an over-long body to an added operation as to a built-in: 413, nothing sent', async () => {
    const before = sim.inquiryCalls;
    const huge = { note: 'x'.repeat(100_000) };
    const added = await ask('address-check', huge);
    const builtIn = await callGateway(gateway.url, 'POST', '/v1/kyc/iban', {
      apiKey: TEST_CLIENTS.full.key,
      json: huge,
    });
    expect([added.status, added.body.code]).toEqual([builtIn.status, builtIn.body.code]);
    expect(added.status).toBe(413);
    expect(sim.inquiryCalls).toBe(before);
  });

  it('keeps no field value in clear in any Redis value (STORE_ENCRYPTION_KEYS set)', async () => {
    const stored: string[] = [];
    for (const key of await redisClient.keys('*')) {
      const type = await redisClient.type(key);
      if (type === 'string') stored.push((await redisClient.get(key)) ?? '');
      else if (type === 'hash') stored.push(JSON.stringify(await redisClient.hgetall(key)));
      else if (type === 'stream') stored.push(JSON.stringify(await redisClient.xrange(key, '-', '+')));
      else if (type === 'zset') stored.push(JSON.stringify(await redisClient.zrange(key, '0', '-1')));
      else if (type === 'list') stored.push(JSON.stringify(await redisClient.lrange(key, 0, -1)));
      else if (type === 'set') stored.push(JSON.stringify(await redisClient.smembers(key)));
    }
    const all = stored.join('\n');
    for (const value of [CARD.sent, IBAN.sent, CODE.sent, '1403/12/30']) expect(all).not.toContain(value);
  });
});

describe('the live OpenAPI document', () => {
  interface Route {
    summary: string;
    security: unknown[];
    requestBody: { content: { 'application/json': { schema: { $ref: string } } } };
    responses: Record<string, unknown>;
  }
  interface Document {
    paths: Record<string, { post: Route }>;
    components: {
      schemas: Record<
        string,
        { properties: Record<string, Record<string, unknown>>; required?: string[]; enum?: string[] }
      >;
    };
  }
  const bodyOf = (document: Document, route: Route) =>
    document.components.schemas[route.requestBody.content['application/json'].schema.$ref.split('/').at(-1) as string];

  it('describes each added route with its fields, description, scope and the built-ins’ answers', async () => {
    const document = (await (await fetch(`${gateway.url}/docs-json`)).json()) as Document;
    expect(
      Object.keys(document.paths)
        .filter((path) => path.startsWith('/v1/kyc/'))
        .sort(),
    ).toEqual([
      '/v1/kyc/address-check',
      '/v1/kyc/card-to-iban',
      '/v1/kyc/iban',
      '/v1/kyc/iban-ownership',
      '/v1/kyc/shahkar',
    ]);
    const route = document.paths['/v1/kyc/card-to-iban'].post;
    expect(route.summary).toBe('The IBAN behind a bank card');
    expect(route.security).toEqual([{ apiKey: [] }, { jwt: ['kyc:card-to-iban'] }]);
    expect(route.responses).toEqual(document.paths['/v1/kyc/shahkar'].post.responses);
    const card = bodyOf(document, route);
    expect(card.required).toEqual(['cardNumber']);
    expect(card.properties.requestHandlingType.enum).toEqual(['standard']);
    const { pattern, example } = card.properties.cardNumber as { pattern: string; example: string };
    expect(new RegExp(pattern, 'u').test(CARD.typed) && new RegExp(pattern, 'u').test(example)).toBe(true);
    const address = bodyOf(document, document.paths['/v1/kyc/address-check'].post);
    expect(address.required).toEqual(['postalCode', 'mobile', 'kind', 'reference']);
    expect(Object.keys(address.properties)).toEqual([
      'postalCode',
      'mobile',
      'kind',
      'reference',
      'note',
      'requestHandlingType',
    ]);
    expect(document.components.schemas.InquiryOperation.enum).toEqual(
      expect.arrayContaining(['shahkar', 'iban', 'card-to-iban', 'iban-ownership', 'address-check']),
    );
    expect((await callGateway(gateway.url, 'GET', '/docs')).status).toBe(200);
  });

  it('passes `redocly lint` (recommended rules) with no error and no warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vgw-added-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, await (await fetch(`${gateway.url}/docs-json`)).text());
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js'), 'lint', file, '--format=json'],
        { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
      );
      const report = JSON.parse(stdout) as { totals: Record<string, number>; problems: unknown[] };
      expect(report.problems).toEqual([]);
      expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
