/**
 * The live gateway against its own committed document (docs/openapi.json): a scripted set of
 * requests provokes every status each operation documents, and every answer is checked: its
 * status is documented for the operation, its media type is the documented one, its body
 * validates against the documented schema, and its documented headers are present (when
 * required) and valid. The test also fails when a documented (operation, status) pair was
 * never provoked, so a status added to the document needs a request here.
 *
 * One operation the operator adds (docs/api.md §10) goes through the inquiries' part as well, its
 * answers checked against the live `/docs-json` of the gateway that has it (that document's route
 * for it is the one docs/openapi.json cannot hold).
 *
 * The validator is Ajv in JSON Schema 2020-12 mode: OpenAPI 3.1 schemas are JSON Schema
 * 2020-12, so they are validated as they are written (openapi-backend and other OpenAPI 3.0
 * validators refuse the 3.1 document: `$ref` with sibling keywords).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { queuedEntry } from './support/ledger-entries.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { RedisServer, freePort } from './support/redis-server.js';
import { IBAN, SHAHKAR } from './support/fixtures.js';
import { raw } from './support/raw-http.js';
import {
  TEST_CLIENTS,
  callGateway,
  startGateway,
  untilStoreReady,
  type RunningGateway,
  apiKeysWith,
  untilStarted,
} from './support/gateway.js';

interface Operation {
  operationId: string;
  responses: Record<
    string,
    {
      content?: Record<string, { schema?: object }>;
      headers?: Record<string, { required?: boolean; schema?: object }>;
    }
  >;
}
type Document = { paths: Record<string, Record<string, Operation>> };

const DOCUMENT = JSON.parse(readFileSync(new URL('../docs/openapi.json', import.meta.url), 'utf8')) as Document;

/** The added operation: two fields, as Shahkar has; its route is only in the live document. */
const ADDED = {
  name: 'card-owner',
  upstreamPath: '/api/v5/KYC/CardOwner',
  fields: { cardNumber: { type: 'cardNumber' }, nationalCode: { type: 'nationalCode' } },
};
const ADDED_TEMPLATE = `/v1/kyc/${ADDED.name}`;
const SHAHKAR_UPSTREAM = '/api/v5/KYC/CheckShahkar';
const ADDED_KEY = 'key-contract-added-0123456789';

// ajv-formats is CommonJS with a default export, which ESM sees as `default` of the module.
type AddFormats = (ajv: Ajv2020) => Ajv2020;
const addFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(DOCUMENT, 'openapi');
/** Header values are strings on the wire: a second instance coerces them to the documented type. */
const headerAjv = new Ajv2020({ strict: false, coerceTypes: true });
addFormats(headerAjv);
headerAjv.addSchema(DOCUMENT, 'openapi');
/**
 * Where an answer is documented: the added operation's, and its record's (`operation` is its name),
 * in the live document (fetched at start); every other in the committed one.
 */
const documentOf = (template: string, live = false) => (live || template === ADDED_TEMPLATE ? 'live' : 'openapi');

const pointer = (...parts: string[]) =>
  '#/' + parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** Operations' statuses too costly to provoke here, each with where its rule lives. */
const NOT_PROVOKED_FOR = new Map([
  [
    'AdminController_reconcile 413',
    'a list over 2 000 000 rows (17 s to send); the cap is MAX_ROWS in src/ledger/reconciliation.ts',
  ],
  [
    'WebhooksController_retry 202',
    'needs a delivery in the outbox: a dead delivery sent again, test/webhooks.e2e.spec.ts',
  ],
  [
    'WebhooksController_retry 400',
    'documented with every admin route; an id that is not a UUID names no delivery: 404 (below)',
  ],
  [
    'AdminController_reconcile 429',
    'a second upload while one is read: proven on the component (test/reconciliation.integration.spec.ts)',
  ],
]);
/** Statuses no request can provoke, and those the HTTP layer answers the same way for every path. */
const NOT_PROVOKED = new Map([
  [
    '500',
    'internal: documented for completeness; no caller input or upstream fault leads to it (test/fuzz.e2e.spec.ts)',
  ],
]);
/** Answered by Node's HTTP parser or the request timeout before routing: checked on one operation. */
const BEFORE_ROUTING = new Set(['408', '431']);
const BEFORE_ROUTING_OPERATION = 'InquiryController_shahkar';

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

const QUOTA_KEY = 'key-contract-quota-0123456789';
const ADMIN_KEY = 'key-contract-admin-0123456789';
const API_KEYS = apiKeysWith(
  {
    clientId: 'app-quota',
    key: QUOTA_KEY,
    scopes: ['kyc:shahkar', 'kyc:iban', `kyc:${ADDED.name}`],
    quotaPerMinute: 1,
  },
  { clientId: 'finance', key: ADMIN_KEY, scopes: ['ledger:read', 'ledger:reconcile'] },
  { clientId: 'app-added', key: ADDED_KEY, scopes: [`kyc:${ADDED.name}`, 'inquiries:read'] },
);
/** The catalog of the gateways that inquire, and its prices (every operation priced). */
const CATALOG = {
  INQUIRY_OPERATIONS: JSON.stringify([ADDED]),
  INQUIRY_PRICES: JSON.stringify({
    shahkar: { standard: 1, advanced: 2 },
    iban: { standard: 1, advanced: 2 },
    [ADDED.name]: { standard: 1, advanced: 2 },
  }),
};
/** app-basic has no units at all: every inquiry of it is a 429 budget_exhausted. */
const BUDGETS = JSON.stringify([{ clientId: TEST_CLIENTS.basic.clientId, daily: 0 }]);

describe('the live gateway against docs/openapi.json', () => {
  const checked = new Set<string>();
  const problems: string[] = [];
  let live: Document;
  let sim: UpstreamSimulator;
  let redis: RedisServer;
  let gateway: RunningGateway;
  let storeless: RunningGateway;
  let silentUpstream: Server;
  const silentSockets = new Set<Socket>();
  let starting: RunningGateway;
  /** Holds no long-poll (INQUIRY_MAX_HELD_WAITS=0): a `Prefer: wait` on a pending record is a 429. */
  let noWaits: RunningGateway;
  /** Its PostgreSQL is not there: the administration routes answer 503. */
  let noLedger: RunningGateway;

  /** Checks one answer against the operation at (method, path template), and records the pair. */
  function check(method: string, template: string, answer: Answer, inLive = false): void {
    const document = documentOf(template, inLive);
    const operation = (document === 'live' ? live : DOCUMENT).paths[template]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${method} ${template} is not in the document`);
    const status = String(answer.status);
    const where = `${operation.operationId} ${status}`;
    checked.add(where);
    const response = operation.responses[status];
    if (!response) {
      problems.push(`${where}: status not documented (body ${answer.text.slice(0, 200)})`);
      return;
    }
    const mediaType = (answer.headers['content-type'] ?? '').split(';')[0].trim();
    if (response.content) {
      const content = response.content[mediaType];
      if (!content) {
        problems.push(`${where}: media type ${mediaType} not documented (${Object.keys(response.content).join(', ')})`);
      } else if (content.schema && /json/.test(mediaType) && mediaType !== 'application/x-ndjson') {
        const validate = ajv.getSchema(
          `${document}${pointer('paths', template, method.toLowerCase(), 'responses', status, 'content', mediaType, 'schema')}`,
        )!;
        if (!validate(JSON.parse(answer.text))) {
          problems.push(`${where}: body ${ajv.errorsText(validate.errors)} (${answer.text.slice(0, 300)})`);
        }
      }
    }
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = answer.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`${where}: required header ${name} missing`);
        continue;
      }
      if (!header.schema) continue;
      const validate: ValidateFunction = headerAjv.compile({
        $ref: `${document}${pointer('paths', template, method.toLowerCase(), 'responses', status, 'headers', name, 'schema')}`,
      });
      const valid: boolean = validate(value);
      if (!valid) problems.push(`${where}: header ${name}=${value} ${headerAjv.errorsText(validate.errors)}`);
    }
  }

  async function call(
    target: RunningGateway,
    method: string,
    template: string,
    options: Parameters<typeof callGateway>[3] & { path?: string; live?: boolean } = {},
  ): Promise<Answer> {
    const res = await callGateway(target.url, method, options.path ?? template, options);
    const answer = { status: res.status, headers: Object.fromEntries(res.headers), text: res.text };
    check(method, template, answer, options.live);
    return answer;
  }

  const inquiry = (operation: string) =>
    ({
      shahkar: {
        template: '/v1/kyc/shahkar',
        upstreamPath: SHAHKAR_UPSTREAM,
        json: SHAHKAR,
        key: TEST_CLIENTS.full.key,
      },
      iban: {
        template: '/v1/kyc/iban',
        upstreamPath: '/api/v5/KYC/IbanInquiry',
        json: { iban: IBAN },
        key: TEST_CLIENTS.full.key,
      },
      [ADDED.name]: {
        template: ADDED_TEMPLATE,
        upstreamPath: ADDED.upstreamPath,
        json: { cardNumber: '6037990000000006', nationalCode: SHAHKAR.nationalCode },
        key: ADDED_KEY,
      },
    })[operation];

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    redis = await RedisServer.start();
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: redis.url,
      API_KEYS,
      BUDGETS,
      ...CATALOG,
      BODY_LIMIT_BYTES: '1024',
      UPSTREAM_TIMEOUT_MS: '1000',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    });
    await untilStoreReady(gateway);
    live = (await (await fetch(`${gateway.url}/docs-json`)).json()) as Document;
    ajv.addSchema(live, 'live');
    headerAjv.addSchema(live, 'live');
    // A Redis that is not there: readiness and every store access answer 503.
    storeless = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      API_KEYS,
      BUDGETS,
      ...CATALOG,
    });
    // An upstream that accepts connections and never answers: the first token attempt never ends.
    silentUpstream = createServer((socket) => silentSockets.add(socket));
    await new Promise<void>((resolve) => silentUpstream.listen(0, '127.0.0.1', resolve));
    const { port } = silentUpstream.address() as { port: number };
    starting = await startGateway({ UPSTREAM_BASE_URL: `http://127.0.0.1:${port}`, UPSTREAM_TIMEOUT_MS: '60000' });
    noWaits = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      UPSTREAM_TIMEOUT_MS: '1000',
      INQUIRY_MAX_HELD_WAITS: '0',
    });
    noLedger = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      API_KEYS,
      ...CATALOG,
      LEDGER_DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/postgres`,
    });
    await untilStarted(gateway.app);
  });

  afterAll(async () => {
    // The silent upstream hangs up: the pending token call fails and `starting` can close.
    for (const socket of silentSockets) socket.destroy();
    await new Promise((resolve) => silentUpstream.close(resolve));
    await Promise.all([gateway.close(), storeless.close(), starting.close(), noWaits.close(), noLedger.close()]);
    await redis.stop();
    await sim.stop();
  });

  it('documents every answer of the probes, /metrics and /docs', async () => {
    for (const path of ['/health/live', '/health/ready', '/health/startup', '/metrics', '/docs', '/docs-json']) {
      expect((await call(gateway, 'GET', path)).status).toBe(200);
    }
    expect((await call(storeless, 'GET', '/health/ready')).status).toBe(503);
    expect((await call(starting, 'GET', '/health/startup')).status).toBe(503);
  });

  it.each(['shahkar', 'iban', ADDED.name])('documents every answer of the %s inquiry', async (operation) => {
    const { template, upstreamPath, json, key } = inquiry(operation);
    const ok = await call(gateway, 'POST', template, {
      apiKey: key,
      json,
      headers: { 'idempotency-key': `ok-${operation}` },
    });
    expect(ok.status).toBe(200);
    // The replay has its own header.
    const replay = await call(gateway, 'POST', template, {
      apiKey: key,
      json,
      headers: { 'idempotency-key': `ok-${operation}` },
    });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect((await call(gateway, 'POST', template, { apiKey: key, json: { nope: 1 } })).status).toBe(400);
    expect((await call(gateway, 'POST', template, { json })).status).toBe(401);
    expect((await call(gateway, 'POST', template, { apiKey: TEST_CLIENTS.none.key, json })).status).toBe(403);
    expect(
      (await call(gateway, 'POST', template, { apiKey: key, raw: JSON.stringify({ pad: 'x'.repeat(2000) }) })).status,
    ).toBe(413);

    // 409: the same key while the first request is still at the upstream.
    sim.setLatency(300);
    try {
      const both = await Promise.all(
        [0, 1].map(() =>
          call(gateway, 'POST', template, { apiKey: key, json, headers: { 'idempotency-key': `busy-${operation}` } }),
        ),
      );
      expect(both.map((a) => a.status).sort()).toEqual([200, 409]);
    } finally {
      sim.setLatency(0);
    }

    sim.setFieldValidator(() => [{ field: 'trackId', message: 'rejected by the provider' }]);
    try {
      expect((await call(gateway, 'POST', template, { apiKey: key, json })).status).toBe(422);
    } finally {
      sim.setFieldValidator(() => []);
    }

    // 429 after the quota client's one request per minute (shared by the operations).
    await call(gateway, 'POST', template, { apiKey: QUOTA_KEY, json });
    const limited = await call(gateway, 'POST', template, { apiKey: QUOTA_KEY, json });
    expect(limited.status).toBe(429);

    sim.injectFault({ kind: 'malformed' });
    expect((await call(gateway, 'POST', template, { apiKey: key, json })).status).toBe(502);

    const credit = sim.credit;
    sim.setCredit(0);
    try {
      expect((await call(gateway, 'POST', template, { apiKey: key, json })).status).toBe(503);
    } finally {
      sim.setCredit(credit);
    }
    expect((await call(storeless, 'POST', template, { apiKey: key, json })).status).toBe(503);

    // Each hang is tied to this operation's upstream path: untied, another upstream call (a token
    // renewal, a question of the tracking service) could take it first.
    sim.injectFault({ kind: 'hang', path: upstreamPath });
    expect((await call(gateway, 'POST', template, { apiKey: key, json })).status).toBe(504);

    // 202 with `Prefer: respond-async`; its record, long-polled until the hung call times out.
    sim.injectFault({ kind: 'hang', path: upstreamPath });
    const accepted = await call(gateway, 'POST', template, { apiKey: key, json, headers: { prefer: 'respond-async' } });
    expect(accepted.status).toBe(202);
    const trackId = (JSON.parse(accepted.text) as { trackId: string }).trackId;
    const held = await call(gateway, 'GET', '/v1/inquiries/{trackId}', {
      path: `/v1/inquiries/${trackId}`,
      apiKey: key,
      headers: { prefer: 'wait=10' },
      live: operation === ADDED.name,
    });
    expect([
      held.status,
      held.headers['preference-applied'],
      (JSON.parse(held.text) as { status: string }).status,
    ]).toEqual([200, 'wait=10', 'unknown']);
  });

  it('documents every answer of the record lookup', async () => {
    const key = TEST_CLIENTS.full.key;
    const made = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: key, json: SHAHKAR });
    const template = '/v1/inquiries/{trackId}';
    const at = (trackId: string) => ({ path: `/v1/inquiries/${trackId}` });
    expect((await call(gateway, 'GET', template, { ...at(String(made.body.trackId)), apiKey: key })).status).toBe(200);
    expect((await call(gateway, 'GET', template, { ...at('%zz'), apiKey: key })).status).toBe(400);
    expect((await call(gateway, 'GET', template, { ...at(String(made.body.trackId)) })).status).toBe(401);
    expect(
      (await call(gateway, 'GET', template, { ...at(String(made.body.trackId)), apiKey: TEST_CLIENTS.none.key }))
        .status,
    ).toBe(403);
    expect((await call(gateway, 'GET', template, { ...at(crypto.randomUUID()), apiKey: key })).status).toBe(404);
    expect((await call(storeless, 'GET', template, { ...at(crypto.randomUUID()), apiKey: key })).status).toBe(503);

    // 429: a long-poll of a pending record on a replica that holds no more waits.
    sim.injectFault({ kind: 'hang', path: SHAHKAR_UPSTREAM });
    const pending = await callGateway(noWaits.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: key,
      json: SHAHKAR,
      headers: { prefer: 'respond-async' },
    });
    const refused = await call(noWaits, 'GET', template, {
      ...at(String(pending.body.trackId)),
      apiKey: key,
      headers: { prefer: 'wait=5' },
    });
    expect([refused.status, refused.headers['retry-after']]).toEqual([429, '1']);
  });

  it('documents every answer of the administration status', async () => {
    expect((await call(gateway, 'GET', '/admin/status', { apiKey: ADMIN_KEY })).status).toBe(200);
    expect((await call(gateway, 'GET', '/admin/status')).status).toBe(401);
    expect((await call(gateway, 'GET', '/admin/status', { apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
  });

  it('documents every answer of the budget views, and the inquiry refused by its budget', async () => {
    const basic = TEST_CLIENTS.basic.key;
    const exhausted = await call(gateway, 'POST', '/v1/kyc/shahkar', { apiKey: basic, json: SHAHKAR });
    expect([exhausted.status, exhausted.headers['x-track-id']]).toEqual([429, undefined]);
    expect(exhausted.text).toContain('budget_exhausted');
    // Redis unreachable: the reservation rides the record's write, so it is refused like any
    // record (nothing sent): 503 naming the trackId that was stamped (docs/api.md §3).
    const unreserved = await call(storeless, 'POST', '/v1/kyc/shahkar', { apiKey: basic, json: SHAHKAR });
    expect(unreserved.status).toBe(503);
    expect(unreserved.headers['x-track-id']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(unreserved.text).toContain('store_unavailable');
    for (const [template, key] of [
      ['/v1/budget', basic],
      ['/admin/budgets', ADMIN_KEY],
    ]) {
      expect((await call(gateway, 'GET', template, { apiKey: key })).status).toBe(200);
      expect((await call(gateway, 'GET', template)).status).toBe(401);
      expect((await call(gateway, 'GET', template, { apiKey: TEST_CLIENTS.none.key })).status).toBe(403);
      expect((await call(storeless, 'GET', template, { apiKey: key })).status).toBe(503);
    }
  });

  it('documents every answer of the administration routes', async () => {
    const csv = { contentType: 'text/csv' };
    const routes = [
      { method: 'GET', template: '/admin/ledger', ok: '?from=2020-01-01&to=2020-01-02', bad: '?from=x&to=2020-01-02' },
      {
        method: 'GET',
        template: '/admin/ledger',
        ok: '?from=2020-01-01&to=2020-01-02&trackId=0b9a3c52-8d4e-4f7a-9c1e-2f5d6a7b8c9d',
        bad: '?from=2020-01-01&to=2020-01-02&trackId=not-a-uuid',
      },
      {
        method: 'GET',
        template: '/admin/usage',
        ok: '?from=2020-01-01&to=2020-02-01&period=month',
        bad: '?from=2020-01-01&to=2020-02-01&period=week',
      },
      {
        method: 'POST',
        template: '/admin/reconciliations',
        ok: '?dryRun=true',
        bad: '',
        body: 'trackId\n0b9a3c52-8d4e-4f7a-9c1e-2f5d6a7b8c9d\n',
        badBody: 'trackId\n',
      },
      { method: 'GET', template: '/admin/ledger/parked', ok: '?from=2020-01-01&to=2020-01-02', bad: '?from=x&to=y' },
      {
        method: 'GET',
        template: '/admin/inquiries',
        ok: '?from=2020-01-01&to=2020-01-02&status=failed&limit=10',
        bad: '?from=2020-01-01&to=2020-01-02&charged=maybe',
      },
      {
        method: 'GET',
        template: '/admin/trends',
        ok: '?from=2020-01-01&to=2020-01-02&timeZone=UTC',
        bad: '?from=2020-01-01&to=2020-01-02&timeZone=Mars/Olympus',
      },
      { method: 'GET', template: '/admin/webhooks/deliveries', ok: '?status=failing', bad: '?status=lost' },
      { method: 'GET', template: '/admin/operator-actions', ok: '?limit=10', bad: '?limit=0' },
    ];
    for (const route of routes) {
      const at = (query: string, body = route.body) => ({
        path: `${route.template}${query}`,
        ...(body !== undefined ? { raw: body, ...csv } : {}),
      });
      expect((await call(gateway, route.method, route.template, { ...at(route.ok), apiKey: ADMIN_KEY })).status).toBe(
        200,
      );
      expect(
        (await call(gateway, route.method, route.template, { ...at(route.bad, route.badBody), apiKey: ADMIN_KEY }))
          .status,
      ).toBe(400);
      expect((await call(gateway, route.method, route.template, at(route.ok))).status).toBe(401);
      expect(
        (await call(gateway, route.method, route.template, { ...at(route.ok), apiKey: TEST_CLIENTS.full.key })).status,
      ).toBe(403);
      expect((await call(noLedger, route.method, route.template, { ...at(route.ok), apiKey: ADMIN_KEY })).status).toBe(
        503,
      );
    }
    // The forecast takes no parameter: no 400 to provoke.
    expect((await call(gateway, 'GET', '/admin/forecast', { apiKey: ADMIN_KEY })).status).toBe(200);
    expect((await call(gateway, 'GET', '/admin/forecast')).status).toBe(401);
    expect((await call(gateway, 'GET', '/admin/forecast', { apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
    expect((await call(noLedger, 'GET', '/admin/forecast', { apiKey: ADMIN_KEY })).status).toBe(503);
    // Who the console acts as: no parameter, no ledger read.
    expect((await call(gateway, 'GET', '/admin/me', { apiKey: ADMIN_KEY })).status).toBe(200);
    expect((await call(gateway, 'GET', '/admin/me')).status).toBe(401);
    expect((await call(gateway, 'GET', '/admin/me', { apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
    // A confirmation whose digest is not the report the ledger gives now: 409, nothing applied.
    const confirm = {
      path: `/admin/reconciliations?digest=${'A'.repeat(43)}`,
      raw: 'trackId\n' + crypto.randomUUID() + '\n',
      ...csv,
    };
    expect((await call(gateway, 'POST', '/admin/reconciliations', { ...confirm, apiKey: ADMIN_KEY })).status).toBe(409);
    // Sending a webhook delivery again: no such delivery (a UUID or not), no credential, no scope, no ledger.
    const retry = '/admin/webhooks/deliveries/{id}/retry';
    const retryOf = (id: string) => ({ path: `/admin/webhooks/deliveries/${id}/retry` });
    for (const id of [crypto.randomUUID(), 'not-a-uuid'])
      expect((await call(gateway, 'POST', retry, { ...retryOf(id), apiKey: ADMIN_KEY })).status).toBe(404);
    const some = retryOf(crypto.randomUUID());
    expect((await call(gateway, 'POST', retry, some)).status).toBe(401);
    expect((await call(gateway, 'POST', retry, { ...some, apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
    expect((await call(noLedger, 'POST', retry, { ...some, apiKey: ADMIN_KEY })).status).toBe(503);
    // Parked entries decided: one the ledger takes, one it refuses again (a lone surrogate).
    const store = gateway.app.get(LedgerStore);
    const [good, bad] = [queuedEntry(), queuedEntry({ clientId: 'jwt:app\ud800' })];
    for (const entry of [good, bad]) await new ParkedEntries(store).park(entry, { code: '23514', message: 'refused' });
    const idOf = (entry: QueuedEntry) => createHash('sha256').update(JSON.stringify(entry)).digest('hex');
    const decide = async (target: RunningGateway, action: string, id: string, body: unknown, apiKey?: string) =>
      (
        await call(target, 'POST', `/admin/ledger/parked/{id}/${action}`, {
          path: `/admin/ledger/parked/${id}/${action}`,
          json: body,
          ...(apiKey ? { apiKey } : {}),
        })
      ).status;
    const why = { reason: 'the contract suite' };
    for (const action of ['redrive', 'discard']) {
      expect(await decide(gateway, action, idOf(good), {}, ADMIN_KEY)).toBe(400);
      expect(await decide(gateway, action, idOf(good), why)).toBe(401);
      expect(await decide(gateway, action, idOf(good), why, TEST_CLIENTS.full.key)).toBe(403);
      expect(await decide(gateway, action, 'f'.repeat(64), why, ADMIN_KEY)).toBe(404);
      expect(await decide(noLedger, action, idOf(good), why, ADMIN_KEY)).toBe(503);
    }
    expect(await decide(gateway, 'redrive', idOf(bad), why, ADMIN_KEY)).toBe(422);
    expect(await decide(gateway, 'redrive', idOf(good), why, ADMIN_KEY)).toBe(200);
    expect(await decide(gateway, 'discard', idOf(bad), why, ADMIN_KEY)).toBe(200);
    expect(await decide(gateway, 'redrive', idOf(bad), why, ADMIN_KEY)).toBe(409);
    expect(await decide(gateway, 'discard', idOf(good), why, ADMIN_KEY)).toBe(409);
  });

  it('documents the answers given before routing (a body too slow, headers too large)', async () => {
    const port = Number(new URL(gateway.url).port);
    const head = `POST /v1/kyc/shahkar HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${TEST_CLIENTS.full.key}\r\nContent-Type: application/json\r\n`;
    const slow = await raw(port, [`${head}Content-Length: 100\r\n\r\n{"nationalCode":`]);
    const large = await raw(port, [`${head}X-Big: ${'b'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\n{}`]);
    for (const answer of [slow, large]) {
      check('POST', '/v1/kyc/shahkar', {
        status: answer.status,
        headers: answer.headers,
        text: JSON.stringify(answer.body),
      });
    }
    expect([slow.status, large.status]).toEqual([408, 431]);
  });

  it('found every answer valid and provoked every documented status', () => {
    expect(problems).toEqual([]);
    const documented = [...Object.values(DOCUMENT.paths), live.paths[ADDED_TEMPLATE]]
      .flatMap((operations) => Object.values(operations))
      .flatMap((operation) => Object.keys(operation.responses).map((status) => ({ id: operation.operationId, status })))
      .filter(({ status }) => !NOT_PROVOKED.has(status))
      .filter(({ id, status }) => !BEFORE_ROUTING.has(status) || id === BEFORE_ROUTING_OPERATION)
      .map(({ id, status }) => `${id} ${status}`)
      .filter((pair) => !NOT_PROVOKED_FOR.has(pair));
    expect(documented.filter((pair) => !checked.has(pair))).toEqual([]);
  });
});
