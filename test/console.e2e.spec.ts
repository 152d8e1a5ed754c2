/**
 * The operators' console (docs/operations.md, "The console") in a real browser: Debian's
 * Chromium driven by playwright-core against a gateway with a real redis-server, the run's
 * PostgreSQL for its ledger (test/support/ledger-postgres.js), budgets, COST_UNIT_PRICE in rials,
 * the Persian calendar in Asia/Tehran, and the upstream simulator, on the ops listener. The key
 * is typed in, kept in sessionStorage and never in a URL or a log line; a budget bar moves after
 * inquiries; money per client equals the ledger's units × the price (and tomans are rials / 10),
 * and the spend chart's day is the exact sum of the amounts recorded at two prices, unpriced
 * units apart; the list filters and pages, opens an inquiry (a failure shows 0 spent and the
 * upstream's message) and downloads exactly its rows; the forecast matches a hand computation on
 * seeded entries; days either side of 1 Farvardin show their Persian months, UTC a click away; a
 * reconciliation CSV is sent and its report shown; the "Now" panel follows the token and the
 * breaker as the simulator fails; a wrong key is told so; no console error the test cannot
 * account for; axe-core finds no serious or critical fault at 1280×800 nor at 390 px; the
 * operation filter offers the catalog's operations, one added by INQUIRY_OPERATIONS among them;
 * a dead webhook delivery is listed and its Retry button (absent for a key without
 * ledger:reconcile) sends it again under the same webhook-id.
 * Screenshots go to os.tmpdir().
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import type { LedgerEntry, QueuedEntry } from '../src/ledger/ledger-entry.js';
import { addRefusals } from '../src/ledger/ledger-refusals.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { ParkedEntries } from '../src/ledger/parked-entries.js';
import { JsonLogger } from '../src/observability/json-logger.js';
import { CHECK_SHAHKAR_PATH, GET_TOKEN_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { launchChromium, chromium, type Browser } from './support/chromium.js';
import { nextEvent } from './support/events.js';
import { SHAHKAR } from './support/fixtures.js';
import {
  TEST_CLIENTS,
  apiKeysWith,
  callGateway,
  startGateway,
  untilStarted,
  untilStoreReady,
  type RunningGateway,
} from './support/gateway.js';
import { RedisServer, freePort } from './support/redis-server.js';
import { describeWith } from './support/tools.js';

const OPERATOR = {
  clientId: 'ops-console',
  key: 'key-ops-console-0123456789',
  scopes: ['ledger:read', 'ledger:reconcile'],
};
/** An operator who may read but not retry (no ledger:reconcile). */
const READER = { clientId: 'ops-reader', key: 'key-ops-reader-0123456789', scopes: ['ledger:read'] };
/** A client of its own (the run's PostgreSQL is shared with other specs): its budget and usage are this test's alone. */
const SHOP = { clientId: 'console-shop', key: 'key-console-shop-0123456789', scopes: ['kyc:shahkar'] };
const SHOP_DAILY_UNITS = 10;
/** This run's own seeded clients (the PostgreSQL is shared across spec files and runs). */
const RUN = randomUUID().slice(0, 8);
const LISTED = `console-list-${RUN}`;
const FORECAST = `console-forecast-${RUN}`;
const REFUSED = `console-refused-${RUN}`;
/** A client of two entries: one made when a unit cost 20 000 rials, one before prices were recorded. */
const REPRICED = `console-repriced-${RUN}`;
/**
 * A client of one day at two recorded prices and one unpriced entry (10 days ago), and a million
 * unpriced units the day before: its 30-day total keeps it among the chart's top clients whatever
 * other specs write into the run's PostgreSQL.
 */
const TWO_PRICES = `console-two-prices-${RUN}`;
const FORECAST_MONTHLY = 9;
const FORECAST_DAILY = 3;
const PRICE = { amount: '25000', currency: 'IRR' };
const DAY_MS = 86_400_000;
const MISMATCH = 'National code and mobile do not match';
const WRONG_KEY = 'key-wrong-console-0123456789';
/** The run's PostgreSQL when its binaries are installed (ledger-postgres.js), else PGlite in the process. */
const LEDGER_DATABASE = process.env.VGW_TEST_LEDGER_DATABASE_URL ? 'postgres' : 'embedded';
const SCREENSHOTS = join(tmpdir(), 'vgw-console-screenshots');
/** An operation the operator added (docs/api.md §10): the console's filter offers it. */
const ADDED_OPERATION = {
  name: 'card-to-iban',
  upstreamPath: '/api/v5/KYC/CardToIban',
  fields: { cardNumber: { type: 'cardNumber' } },
};
/** A client whose only entries are of the added operation. */
const ADDED_CLIENT = `console-added-${RUN}`;
/** A webhook endpoint of this run, subscribed to HOOKED's settled inquiries (docs/api.md §9). */
const HOOK = { id: `console-${RUN}`, secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}` };
const HOOKED = `console-hooked-${RUN}`;

/** A settled entry of a seeded client. */
function seeded(clientId: string, createdAt: number, fields: Partial<LedgerEntry> = {}): QueuedEntry {
  const at = new Date(createdAt).toISOString();
  return {
    trackId: randomUUID(),
    kind: 'settled',
    clientId,
    operation: 'shahkar',
    requestHandlingType: 'standard',
    status: 'succeeded',
    charged: 'yes',
    costUnits: 1,
    createdAt: at,
    completedAt: at,
    upstreamCode: 0,
    // As the gateway stamps it when COST_UNIT_PRICE is set (money is read from it).
    unitPrice: PRICE.amount,
    currency: PRICE.currency,
    ...fields,
  };
}

/**
 * The list's client: 30 inquiries in the last 30 hours (every fifth failed, charged no, upstream
 * code 15 with its message; one unknown; advanced ones cost 3), and two either side of
 * 1 Farvardin 1405 in Tehran (2026-03-21T00:00+03:30 = 2026-03-20T20:30Z).
 */
function listedEntries(now: number): QueuedEntry[] {
  const recent = Array.from({ length: 30 }, (_, i) => {
    const at = now - (i + 1) * 3_600_000;
    if (i === 7)
      return seeded(LISTED, at, {
        kind: 'overdue',
        status: 'unknown',
        charged: 'possibly',
        completedAt: undefined,
        upstreamCode: undefined,
      });
    if (i % 5 === 2)
      return seeded(LISTED, at, { status: 'failed', charged: 'no', upstreamCode: 15, upstreamMessage: MISMATCH });
    return seeded(LISTED, at, i % 4 === 0 ? { requestHandlingType: 'advanced', costUnits: 3 } : {});
  });
  return [
    ...recent,
    seeded(LISTED, Date.parse('2026-03-20T20:00:00Z'), { operation: 'iban' }),
    seeded(LISTED, Date.parse('2026-03-20T21:00:00Z'), { operation: 'iban' }),
  ];
}

/** The forecast's client: 3 units a day for the last 6 days (18 in 7 days), and a failure that spends nothing. */
function forecastEntries(now: number): QueuedEntry[] {
  return [
    ...Array.from({ length: 6 }, (_, i) =>
      seeded(FORECAST, now - (i + 1) * DAY_MS + 3_600_000, { costUnits: 3, requestHandlingType: 'advanced' }),
    ),
    seeded(FORECAST, now - 3_600_000, { status: 'failed', charged: 'no', costUnits: 3, upstreamCode: 15 }),
  ];
}

/** Units spent (charged or possibly) × the price, as the ledger's entries say: the hand computation of money. */
const rials = (entries: QueuedEntry[]) =>
  (
    BigInt(entries.filter((e) => e.charged !== 'no').reduce((sum, e) => sum + e.costUnits, 0)) * BigInt(PRICE.amount)
  ).toString();
const grouped = (digits: string) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** Every line the gateway logs, as written (JSON), to look for the keys in. */
class Lines extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    this.emit('text');
    callback();
  }
}

/** Resolves once the element's whole text matches `pattern` (Playwright polls; the page refreshes "Now" every 5 s). */
async function untilText(page: Page, selector: string, pattern: RegExp, timeout = 20_000): Promise<string> {
  const locator = page.locator(selector).filter({ hasText: pattern });
  await locator.waitFor({ state: 'visible', timeout });
  return locator.innerText();
}

describeWith(chromium(), 'operators console in a real browser', (executablePath) => {
  const lines = new Lines();
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let consoleUrl: string;
  let browser: Browser;
  let page: Page;
  let seededAt: number;
  let listed: QueuedEntry[];
  let forecasted: QueuedEntry[];
  let added: QueuedEntry[];
  /** Console errors and uncaught exceptions of the page, in order. */
  const pageErrors: string[] = [];
  /** `written` with each batch the gateway's drainer has inserted into PostgreSQL. */
  const drained = new EventEmitter();
  /** Every trackId the drainer has written so far (the `drained` events, remembered). */
  const writtenTrackIds = new Set<string>();
  /** The webhook receiver: `delivery` with each verified one ({ id, trackId, status }); answers `hookStatus`. */
  const hooks = new EventEmitter();
  let hookStatus = 503;
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      let trackId: string | undefined;
      try {
        const event = new Webhook(HOOK.secret).verify(body, request.headers as Record<string, string>);
        trackId = (event as { data: { trackId: string } }).data.trackId;
      } catch {
        // unverified: answered 400 and told with no trackId, which no test awaits
      }
      const status = trackId ? hookStatus : 400;
      response.statusCode = status;
      response.end();
      hooks.emit('delivery', { id: request.headers['webhook-id'], trackId, status });
    });
  });
  /** An administration route's JSON on the ops listener, with the operator's key. */
  const admin = async (path: string): Promise<Record<string, unknown> & { company: Record<string, unknown> }> => {
    const answer = await callGateway(consoleUrl.replace(/\/console$/, ''), 'GET', path, { apiKey: OPERATOR.key });
    expect(answer.status).toBe(200);
    return answer.body as Record<string, unknown> & { company: Record<string, unknown> };
  };
  /** Resolves once every one of `trackIds` has a ledger entry in PostgreSQL (bounded, not a sleep). */
  const written = async (trackIds: string[]) => {
    // Entries the drainer wrote before this was called count too (it may write the first inquiry's
    // while the test is still sending the third): only the missing ones are awaited.
    const waiting = new Set(trackIds.filter((trackId) => !writtenTrackIds.has(trackId)));
    if (waiting.size === 0) return;
    await nextEvent<QueuedEntry[]>(
      drained,
      'written',
      (batch) => {
        for (const entry of batch) waiting.delete(entry.trackId);
        return waiting.size === 0;
      },
      30_000,
    );
  };

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    redis = await RedisServer.start();
    // Tokens live 4 s (renewed at half-life), so a failing GetToken shows within seconds.
    sim = new UpstreamSimulator({ accessTokenSeconds: 4 });
    await sim.start();
    const opsPort = await freePort();
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    gateway = await startGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        REDIS_URL: redis.url,
        OPS_PORT: String(opsPort),
        API_KEYS: apiKeysWith(OPERATOR, SHOP, READER),
        BUDGETS: JSON.stringify([
          { clientId: SHOP.clientId, daily: SHOP_DAILY_UNITS },
          { clientId: FORECAST, daily: FORECAST_DAILY, monthly: FORECAST_MONTHLY },
          { clientId: '*', daily: 100_000 },
        ]),
        COST_UNIT_PRICE: JSON.stringify(PRICE),
        INQUIRY_OPERATIONS: JSON.stringify([ADDED_OPERATION]),
        INQUIRY_PRICES: JSON.stringify({
          shahkar: { standard: 1, advanced: 3 },
          iban: { standard: 1, advanced: 3 },
          [ADDED_OPERATION.name]: { standard: 2, advanced: 4 },
        }),
        BUDGET_TIMEZONE: 'Asia/Tehran',
        BUDGET_CALENDAR: 'persian',
        // The breaker stays open for the test's look at it.
        UPSTREAM_CIRCUIT_RESET_MS: '60000',
        WEBHOOKS: JSON.stringify([
          { id: HOOK.id, clientId: HOOKED, url: hookUrl, secret: HOOK.secret, events: ['inquiry.settled'] },
        ]),
        WEBHOOKS_ALLOW_HTTP: 'true',
        WEBHOOKS_POLL_MS: '50',
        WEBHOOKS_FIRST_RETRY_MS: '100',
        WEBHOOKS_RETRY_FOR_SECONDS: '1',
      },
      { logger: new JsonLogger('info', lines) },
    );
    // The drainer's writes observed (the same store instance it inserts through; the rows are real).
    const store = gateway.app.get(LedgerStore);
    const insert = store.insert.bind(store);
    store.insert = async (entries) => {
      const inserted = await insert(entries);
      for (const entry of entries) writtenTrackIds.add(entry.trackId);
      drained.emit('written', entries);
      return inserted;
    };
    await untilStarted(gateway.app);
    await untilStoreReady(gateway);
    seededAt = Date.now();
    listed = listedEntries(seededAt);
    forecasted = forecastEntries(seededAt);
    added = [1, 2].map((hours) =>
      seeded(ADDED_CLIENT, seededAt - hours * 3_600_000, { operation: ADDED_OPERATION.name, costUnits: 2 }),
    );
    await store.insert([
      ...added,
      ...listed,
      ...forecasted,
      seeded(REPRICED, seededAt - 3_600_000, { unitPrice: '20000' }),
      seeded(REPRICED, seededAt - 3_600_000, { unitPrice: undefined, currency: undefined }),
      seeded(TWO_PRICES, seededAt - 10 * DAY_MS, { costUnits: 2 }),
      seeded(TWO_PRICES, seededAt - 10 * DAY_MS, { unitPrice: '30000.5' }),
      seeded(TWO_PRICES, seededAt - 10 * DAY_MS, { unitPrice: undefined, currency: undefined }),
      seeded(TWO_PRICES, seededAt - 11 * DAY_MS, { costUnits: 1_000_000, unitPrice: undefined, currency: undefined }),
    ]);
    // Refusals of yesterday in Tehran, as a replica's flush adds them (by BUDGET_TIMEZONE day only).
    const yesterday = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Tehran' }).format(seededAt - DAY_MS);
    await addRefusals(store.db, [
      { day: yesterday, clientId: REFUSED, operation: 'shahkar', reason: 'budget', count: 4 },
    ]);
    consoleUrl = `http://127.0.0.1:${opsPort}/console`;
    browser = await launchChromium(executablePath);
    page = await browser.context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push(`${message.text()} @ ${message.location().url}`);
    });
    page.on('pageerror', (error) => pageErrors.push(`uncaught: ${error.message}`));
    // A browser start on a loaded 2-core machine can take tens of seconds.
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await sim?.stop();
    await redis?.stop();
    receiver.close();
  }, 60_000);

  it('is served on the ops port only, with a strict Content-Security-Policy, and /admin/status needs ledger:read', async () => {
    const publicPage = await callGateway(gateway.url, 'GET', '/console');
    expect(publicPage.status).toBe(404);
    const opsPage = await fetch(consoleUrl);
    expect(opsPage.status).toBe(200);
    expect(opsPage.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = opsPage.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    const module = await fetch(`${consoleUrl}/list.js`);
    expect(module.status).toBe(200);
    expect(module.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${consoleUrl}/..%2fpackage.json`)).status).toBe(404);

    const opsUrl = consoleUrl.replace(/\/console$/, '');
    expect((await callGateway(opsUrl, 'GET', '/admin/status')).status).toBe(401);
    expect((await callGateway(opsUrl, 'GET', '/admin/status', { apiKey: TEST_CLIENTS.full.key })).status).toBe(403);
    expect((await callGateway(gateway.url, 'GET', '/admin/status', { apiKey: OPERATOR.key })).status).toBe(404);
    const status = await callGateway(opsUrl, 'GET', '/admin/status', { apiKey: OPERATOR.key });
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      token: { state: 'valid', renewalFailures: 0 },
      circuit: { state: 'closed' },
      redis: { mode: 'standalone', reachable: true },
      heldLongPolls: 0,
      ledger: { database: LEDGER_DATABASE, databaseReachable: true },
      routes: { ledger: true, usage: true, budgets: true, reconciliations: true, webhooks: true },
      build: { version: expect.any(String) as unknown },
      scopes: OPERATOR.scopes,
    });
  });

  it('a wrong key is told so, and forgotten', async () => {
    await page.goto(consoleUrl);
    await page.fill('#api-key', WRONG_KEY);
    await page.click('#key-form button[type=submit]');
    expect(await untilText(page, '#key-message', /did not accept this key/)).toContain('check it');
    expect(await page.evaluate<number>('sessionStorage.length')).toBe(0);
    expect(await page.isHidden('#now-facts')).toBe(true);
    await page.screenshot({ path: join(SCREENSHOTS, 'wrong-key.png') });
  });

  it('with a key typed in (keyboard only), shows the state of this replica', async () => {
    await page.goto(consoleUrl);
    // Tab from the top of the page to the key field, type, Enter.
    for (let i = 0; i < 5 && (await page.evaluate('document.activeElement?.id')) !== 'api-key'; i++) {
      await page.keyboard.press('Tab');
    }
    expect(await page.evaluate('document.activeElement?.id')).toBe('api-key');
    await page.keyboard.type(OPERATOR.key);
    await page.keyboard.press('Enter');

    expect(await untilText(page, '#now-token-state', /^valid$/)).toBe('valid');
    expect(await page.innerText('#now-circuit')).toBe('closed');
    expect(await page.innerText('#now-redis')).toBe('reachable (standalone)');
    expect(await page.innerText('#now-postgres')).toBe(
      LEDGER_DATABASE === 'postgres' ? 'reachable (postgres)' : 'reachable (embedded PGlite: one replica only)',
    );
    expect(await page.innerText('#now-queue')).toMatch(/^\d+ waiting, oldest \d+ s$/);
    expect(await page.innerText('#now-held')).toBe('0');
    // The money panels drawn from the real routes: this client's budget, at 0 of 10 units.
    await page.locator(`#budgets tr[data-client="${SHOP.clientId}"] meter`).waitFor({ timeout: 20_000 });
    expect(await page.locator('#budgets tr[data-client="*"] meter').count()).toBe(1);
    // The key: in this tab's sessionStorage, never in the address.
    expect(page.url()).toBe(consoleUrl);
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).toEqual([OPERATOR.key]);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-1280.png'), fullPage: true });
  }, 60_000);

  it('shows a budget bar move after inquiries, their usage, one inquiry by trackId and a reconciliation report', async () => {
    const bar = `#budgets tr[data-client="${SHOP.clientId}"][data-window="daily"] meter`;
    expect(await page.getAttribute(bar, 'value')).toBe('0');
    expect(await page.getAttribute(bar, 'max')).toBe(String(SHOP_DAILY_UNITS));

    // Three inquiries; their entries reach PostgreSQL through the drainer, awaited here.
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', { apiKey: SHOP.key, json: SHAHKAR });
      expect(answer.status).toBe(200);
      answers.push(answer.body.trackId as string);
    }
    await written(answers);

    await page.click('#money-refresh');
    // Reserved at the call, spent at settlement: 3 units of 10.
    await page.locator(`${bar}[value="3"]`).waitFor({ timeout: 20_000 });
    expect(await page.getAttribute(bar, 'aria-label')).toBe(`${SHOP.clientId}, daily: 3 of ${SHOP_DAILY_UNITS} units`);
    // Spent this month, in units and rials (3 × 25 000), from the ledger.
    expect(await untilText(page, `#clients tr[data-client="${SHOP.clientId}"] td[data-field="spent"]`, /IRR/)).toBe(
      '3\n75,000 IRR',
    );
    await page.locator('#spend-chart svg rect').first().waitFor();
    const [trackId] = answers;
    await page.fill('#track-id', trackId.toUpperCase());
    // The server picks the inquiry's entries: the page asks for that trackId, not the period.
    const lookup = page.waitForRequest((request) => new URL(request.url()).searchParams.get('trackId') === trackId);
    await page.press('#track-id', 'Enter');
    expect(new URL((await lookup).url()).pathname).toBe('/admin/ledger');
    expect(await untilText(page, '#inquiry-status', /charged/)).toBe('succeeded (charged: yes)');
    expect(await page.innerText('#inquiry-spent')).toBe('1 units, 25,000 IRR');
    expect(await page.locator('#inquiry-result tbody tr').count()).toBe(1);
    const inquiry = await page.innerText('#inquiry-result');
    expect(inquiry).toContain(trackId);
    expect(inquiry).toContain(SHOP.clientId);
    expect(inquiry).not.toContain(SHAHKAR.nationalCode);
    expect(inquiry).not.toContain(SHAHKAR.mobileNumber);

    // The provider's list: the first inquiry and one this gateway never sent.
    const stranger = randomUUID();
    await page.setInputFiles('#reconcile-file', {
      name: 'provider.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(`trackId,amount\n${trackId},1\n${stranger},1\n`),
    });
    await page.click('#reconcile-form button[type=submit]');
    await page.locator('#reconcile-report').waitFor({ timeout: 20_000 });
    // A dry run (finding, inquiries, units, money): nothing is applied until it is confirmed.
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedAndRecorded"]')).toMatch(/\t1\t1\t/);
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedNotInLedger"]')).toMatch(
      /never sent by this gateway.*\t1\t–\t–$/,
    );
    expect(await page.innerText('#reconcile-report')).toContain(stranger);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-money.png'), fullPage: true });
  }, 60_000);

  it("shows each client's month in rials equal to the ledger's units × the price, and in tomans a click away", async () => {
    const forecast = await admin('/admin/forecast');
    const since = Date.parse(forecast.company.startsAt as string);
    const thisMonth = listed.filter((e) => Date.parse(e.createdAt) >= since);
    const units = thisMonth.filter((e) => e.charged !== 'no').reduce((sum, e) => sum + e.costUnits, 0);
    const cell = `#clients tr[data-client="${LISTED}"] td[data-field="spent"]`;
    expect(await untilText(page, cell, /IRR/)).toBe(`${units}\n${grouped(rials(thisMonth))} IRR`);
    await page.check('#show-tomans');
    const tomans = (BigInt(rials(thisMonth)) / 10n).toString();
    expect(await untilText(page, cell, /toman/)).toBe(`${units}\n${grouped(tomans)} toman`);
    await page.uncheck('#show-tomans');
    await untilText(page, cell, /IRR/);
    // Money at the price each inquiry recorded, never today's 25 000; the unpriced one apart.
    expect(await untilText(page, `#clients tr[data-client="${REPRICED}"] td[data-field="spent"]`, /IRR/)).toBe(
      '2\n20,000 IRR\n+ 1 units unpriced',
    );
    // And over the forecast's last 7 days, the same two entries.
    expect(await untilText(page, `#clients tr[data-client="${REPRICED}"] td[data-field="last-days"]`, /IRR/)).toBe(
      '2\n20,000 IRR\n+ 1 units unpriced',
    );
  }, 60_000);

  it("charts each day's spend as the sum of the amounts recorded, unpriced units apart as units", async () => {
    await page.locator('#spend-chart svg rect').first().waitFor();
    // Each stack's tooltip: `<day>, <client>: <spend>` (and the day's total on a line of its own).
    const stacks = (await page.locator('#spend-chart svg title').allTextContents())
      .map((text) => text.split('\n')[0])
      .filter((text) => text.includes(`, ${TWO_PRICES}: `))
      .map((text) => text.slice(text.indexOf(TWO_PRICES)));
    // Day by day: the million unpriced units, then 2 × 25 000 + 1 × 30 000.5 rials exactly and the
    // unpriced unit beside, never at today's price.
    expect(stacks).toEqual([
      `${TWO_PRICES}: 0 IRR + 1,000,000 units unpriced (1,000,000 units)`,
      `${TWO_PRICES}: 80,000.5 IRR + 1 units unpriced (4 units)`,
    ]);
    expect(await page.innerText(`#spend-chart li[data-series="${TWO_PRICES}"]`)).toBe(
      `${TWO_PRICES}: 80,000.5 IRR + 1,000,001 units unpriced (1,000,004 units)`,
    );
    expect(await untilText(page, '#spend-trend p.note', /recorded no price/, 5_000)).toMatch(
      /^[\d,]+ units spent in these 30 days recorded no price/,
    );
  });

  it("a 503 from the last 7 days' usage read leaves the month's money and every client's units standing", async () => {
    const forecast = await admin('/admin/forecast');
    const monthFrom = forecast.company.startsAt as string;
    // Only the second usage read (the forecast's 7 days) fails, as a replica behind a proxy might.
    const lastDaysRead = (url: URL) => url.pathname === '/admin/usage' && url.searchParams.get('from') !== monthFrom;
    await page.route(lastDaysRead, (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/problem+json',
        body: JSON.stringify({ type: 'about:blank', title: 'Unavailable', status: 503, code: 'ledger_unavailable' }),
      }),
    );
    try {
      const refused = page.waitForResponse((response) => lastDaysRead(new URL(response.url())));
      await page.click('#money-refresh');
      await refused;
      await page.locator('#clients[data-savings="read"], #clients p.error').first().waitFor();
      expect(await page.locator('#clients p.error').count()).toBe(0);
      // The month's money (its read succeeded) and the 7 days in units (the forecast's) stay.
      expect(await page.innerText(`#clients tr[data-client="${REPRICED}"] td[data-field="spent"]`)).toBe(
        '2\n20,000 IRR\n+ 1 units unpriced',
      );
      expect(await page.innerText(`#clients tr[data-client="${REPRICED}"] td[data-field="last-days"]`)).toMatch(/^2\b/);
    } finally {
      await page.unroute(lastDaysRead);
      // The page's own log of the refused load is this test's doing, not the page's.
      pageErrors.splice(0, pageErrors.length, ...pageErrors.filter((text) => !/ 503 /.test(text)));
      await page.click('#money-refresh');
      await page.locator('#clients[data-savings="read"]').waitFor();
    }
  }, 60_000);

  it('lists inquiries filtered and paged, opens one, and downloads exactly the filtered rows', async () => {
    await page.fill('#list-clientId', LISTED);
    await page.selectOption('#list-status', '');
    await page.selectOption('#list-limit', '25');
    await page.click('#list-form button[type=submit]');
    expect(await untilText(page, '#list-summary', /^Page 1: 25 /)).toMatch(/newest first; times in Asia\/Tehran\.$/);
    const recent = listed.slice(0, 30);
    const newestFirst = (entries: QueuedEntry[]) => entries.map((e) => e.trackId);
    const shown = () =>
      page
        .locator('#list-result tbody tr')
        .evaluateAll((rows: Array<{ getAttribute(name: string): string | null }>) =>
          rows.map((row) => row.getAttribute('data-track-id')),
        );
    expect(await shown()).toEqual(newestFirst(recent.slice(0, 25)));
    await page.click('#list-next');
    expect(await untilText(page, '#list-summary', /^Page 2: 5 /)).toContain('Page 2');
    expect(await shown()).toEqual(newestFirst(recent.slice(25)));
    await page.click('#list-previous');
    await untilText(page, '#list-summary', /^Page 1: 25 /);

    const failed = recent.filter((e) => e.status === 'failed');
    await page.selectOption('#list-status', 'failed');
    await page.click('#list-form button[type=submit]');
    await untilText(page, '#list-summary', new RegExp(`^Page 1: ${failed.length} `));
    expect(await shown()).toEqual(newestFirst(failed));
    // A failure spent nothing: 0, never its price.
    expect(await page.innerText('#list-result tbody tr:first-child td[data-field="spent"]')).toBe('0 units\n0 IRR');

    const [file] = await Promise.all([page.waitForEvent('download'), page.click('#list-download-csv')]);
    const [header, ...rows] = readFileSync(await file.path(), 'utf8')
      .trimEnd()
      .split('\r\n');
    expect(header.split(',')[0]).toBe('trackId');
    expect(rows.map((row) => row.split(',')[0])).toEqual(newestFirst(failed));
    expect(rows.every((row) => row.includes(`,failed,no,1,`))).toBe(true);

    await page.click(`#list-result tbody tr[data-track-id="${failed[0].trackId}"] button`);
    expect(await untilText(page, '#inquiry-status', /charged/)).toBe('failed (charged: no)');
    expect(await page.innerText('#inquiry-spent')).toBe('0 units, 0 IRR');
    expect(await page.innerText('#inquiry-upstream')).toBe(`15: ${MISMATCH}`);
  }, 60_000);

  it('offers the catalog’s operations in the filter, and lists an added one’s inquiries', async () => {
    const offered = await page
      .locator('#list-operation option')
      .evaluateAll((options) => options.map((option) => (option as unknown as { value: string }).value));
    expect(offered).toEqual(['', 'shahkar', 'iban', ADDED_OPERATION.name]);
    // The tests after this one read the list of the client filled in before it.
    const client = await page.inputValue('#list-clientId');
    await page.fill('#list-clientId', ADDED_CLIENT);
    await page.selectOption('#list-status', '');
    await page.selectOption('#list-operation', ADDED_OPERATION.name);
    await page.click('#list-form button[type=submit]');
    await untilText(page, '#list-summary', /^Page 1: 2 /);
    const shown = await page
      .locator('#list-result tbody tr')
      .evaluateAll((rows: Array<{ getAttribute(name: string): string | null }>) =>
        rows.map((row) => row.getAttribute('data-track-id')),
      );
    expect(shown).toEqual(added.map((entry) => entry.trackId));
    await page.screenshot({ path: join(SCREENSHOTS, 'console-added-operation.png'), fullPage: true });
    await page.selectOption('#list-operation', '');
    await page.fill('#list-clientId', client);
  }, 60_000);

  it('forecasts each budget as a hand computation on the seeded entries says', async () => {
    const forecast = await admin('/admin/forecast');
    const mine = (forecast.budgets as Array<Record<string, unknown>>).filter((b) => b.clientId === FORECAST);
    const now = Date.parse(forecast.checkedAt as string);
    // Hand computation: 6 × 3 units charged in the last 7 days (the failure spends nothing): 18,
    // 2.57 a day; nothing used yet, so the month's 9 units last 9 × 7 / 18 = 3.5 days, the day's
    // 3 units 3 × 7 / 18 days, more than a day: not this window.
    const lastDays = forecasted.filter((e) => e.charged !== 'no' && Date.parse(e.createdAt) >= now - 7 * DAY_MS);
    expect(lastDays.reduce((sum, e) => sum + e.costUnits, 0)).toBe(18);
    const monthly = mine.find((b) => b.window === 'monthly')!;
    const daily = mine.find((b) => b.window === 'daily')!;
    expect(monthly).toMatchObject({
      limitUnits: FORECAST_MONTHLY,
      usedUnits: 0,
      lastDaysUnits: 18,
      ratePerDay: '2.57',
    });
    const monthlyEnd = now + 3.5 * DAY_MS;
    expect(monthly.runsOutAt).toBe(
      monthlyEnd < Date.parse(monthly.resetsAt as string) ? new Date(monthlyEnd).toISOString() : null,
    );
    expect(daily).toMatchObject({ limitUnits: FORECAST_DAILY, lastDaysUnits: 18, runsOutAt: null });

    await page.click('#money-refresh');
    const row = (window: string) => `#budgets tr[data-client="${FORECAST}"][data-window="${window}"]`;
    expect(await untilText(page, `${row('daily')} td:nth-child(7)`, /not this window/)).toBe('not this window');
    if (monthly.runsOutAt === null) {
      expect(await page.innerText(`${row('monthly')} td:nth-child(7)`)).toBe('not this window');
    } else {
      // The page asked a moment later: its instant is within that moment of the hand computation.
      const shown = await page.getAttribute(`${row('monthly')} td:nth-child(7) time`, 'datetime');
      expect(Math.abs(Date.parse(shown!) - monthlyEnd)).toBeLessThan(60_000);
    }
  }, 60_000);

  it('writes days on the Persian calendar either side of 1 Farvardin, UTC a click away, and what went wrong per day', async () => {
    await page.fill('#list-from', '2026-03-20');
    await page.fill('#list-to', '2026-03-21');
    await page.selectOption('#list-status', '');
    await page.click('#list-form button[type=submit]');
    await untilText(page, '#list-summary', /^Page 1: 2 /);
    const made = () => page.locator('#list-result tbody td.when').allInnerTexts();
    // Newest first: 00:30 on 1 Farvardin 1405, then 23:30 on 29 Esfand 1404 (Tehran, UTC+3:30).
    const [farvardin, esfand] = await made();
    expect(farvardin).toMatch(/^۱ فروردین ۱۴۰۵، ۰۰:۳۰:۰۰/);
    expect(esfand).toMatch(/^۲۹ اسفند ۱۴۰۴، ۲۳:۳۰:۰۰/);
    const refusalsChart = '#refusals-trend svg[role=img]';
    expect(await page.getAttribute(refusalsChart, 'aria-label')).toContain('per day (Asia/Tehran)');
    await page.check('#show-utc');
    await untilText(page, '#list-summary', /times in UTC\.$/);
    expect(await made()).toEqual(['20 Mar 2026, 21:00:00 UTC', '20 Mar 2026, 20:00:00 UTC']);
    // The rows in UTC days, the refusals still by their BUDGET_TIMEZONE day: said, and the zone named.
    expect(await untilText(page, '#refusals-trend p', /not UTC/)).toBe(
      'Refusals are counted by day in Asia/Tehran (BUDGET_TIMEZONE), not UTC.',
    );
    expect(await page.getAttribute(refusalsChart, 'aria-label')).toContain('per day (Asia/Tehran)');
    await page.uncheck('#show-utc');
    await untilText(page, '#list-summary', /times in Asia\/Tehran\.$/);

    // The failures of the day the first failed inquiry was made (in Tehran), with the upstream's message.
    const failedAt = listed.find((e) => e.status === 'failed')!.createdAt;
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Tehran' }).format(new Date(failedAt));
    await page.fill('#trend-day', day);
    await page.dispatchEvent('#trend-day', 'change');
    expect(await untilText(page, `#day-detail tr[data-client="${LISTED}"]`, /failed/)).toContain(`15: ${MISMATCH}`);
    await page.locator('#errors-chart svg rect').first().waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, 'console-persian.png'), fullPage: true });
  }, 60_000);

  it('follows the breaker and the token as the upstream fails', async () => {
    // The breaker: upstream 5xx answers until it opens.
    for (let sent = 0; sent < 30; sent++) {
      sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500' });
      const answer = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
        apiKey: TEST_CLIENTS.full.key,
        json: SHAHKAR,
      });
      if (answer.status === 503) break;
      expect(answer.status).toBe(502);
    }
    await page.click('#now-refresh');
    expect(await untilText(page, '#now-circuit', /^open$/)).toBe('open');

    // The token: every GetToken fails from now on; the next renewal (within 2 s) fails, the
    // failures are counted, and the held token runs out.
    sim.injectFault({ path: GET_TOKEN_PATH, kind: 'http500', times: 1_000_000 });
    expect(await untilText(page, '#now-token-failures', /^[1-9]/)).toMatch(/upstream/);
    expect(await untilText(page, '#now-token-state', /^expired$/)).toBe('expired');
    await page.screenshot({ path: join(SCREENSHOTS, 'console-failing.png'), fullPage: true });
  }, 60_000);

  it('lists a dead webhook delivery, and its Retry button sends it again under the same webhook-id', async () => {
    const entry = seeded(HOOKED, Date.now());
    const first = nextEvent<{ id: string; trackId?: string }>(hooks, 'delivery', (d) => d.trackId === entry.trackId);
    await gateway.app.get(LedgerStore).insert([entry]);
    const { id } = await first;
    // Dead once WEBHOOKS_RETRY_FOR_SECONDS (1 s) of 503s has run out: the dispatcher says so in its log.
    const dead = () => lines.text.includes(`webhook delivery ${id} to ${HOOK.id} is dead`);
    if (!dead()) await nextEvent(lines, 'text', dead, 20_000);
    await page.click('#webhooks-refresh');
    const row = page.locator(`#webhooks-dead tr[data-delivery="${id}"]`);
    expect(await row.innerText()).toMatch(
      new RegExp(`${HOOK.id}\\s+inquiry\\.settled\\s+${entry.trackId}[\\s\\S]*HTTP 503`),
    );
    // A key with ledger:read only sees the dead delivery, and no Retry button.
    const reader = await browser.context.newPage();
    await reader.goto(consoleUrl);
    await reader.fill('#api-key', READER.key);
    await reader.click('#key-form button[type=submit]');
    await reader.locator(`#webhooks-dead tr[data-delivery="${id}"]`).waitFor({ timeout: 20_000 });
    expect(await reader.locator('#webhooks-dead button').count()).toBe(0);
    expect(await reader.innerText('#webhooks-dead')).toContain('needs a key with ledger:reconcile');
    await reader.close();
    hookStatus = 200;
    const resent = nextEvent(hooks, 'delivery', (d: { id: string; status: number }) => d.id === id);
    await row.getByRole('button', { name: new RegExp(`^Retry delivery ${id}`) }).click();
    expect(await resent).toEqual({ id, trackId: entry.trackId, status: 200 });
    expect(await untilText(page, '#webhooks-message', /queued again/)).toContain(id);
    await row.waitFor({ state: 'detached' });
  }, 60_000);
  it('says of each unknown when the provider was last asked about it and what it answered', async () => {
    const store = gateway.app.get(LedgerStore);
    const client = `console-asked-${RUN}`;
    const tehranDay = (at: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Tehran' }).format(at);
    const unknown = { kind: 'overdue', status: 'unknown', charged: 'possibly', completedAt: undefined } as const;
    const [asked, never] = [2, 3].map((hours) => seeded(client, Date.now() - hours * 3_600_000, unknown));
    await store.insert([asked, never]);
    await store.db.query(
      `INSERT INTO ledger_tracking (track_id, created_at, questions, last_asked_at, last_answer)
       VALUES ($1, $2, 2, now() - interval '5 minutes', 'not_found')`,
      [asked.trackId, asked.createdAt],
    );
    // The tests after this one read the form as it was.
    const before = await Promise.all(
      ['#list-clientId', '#list-status', '#list-from', '#list-to'].map((id) => page.inputValue(id)),
    );
    await page.fill('#list-clientId', client);
    await page.selectOption('#list-status', 'unknown');
    await page.fill('#list-from', tehranDay(Date.now() - DAY_MS));
    await page.fill('#list-to', tehranDay(Date.now()));
    await page.click('#list-form button[type=submit]');
    await untilText(page, '#list-summary', /^Page 1: 2 /);
    const cell = (entry: QueuedEntry) => `#list-result tr[data-track-id="${entry.trackId}"] td[data-field="asked"]`;
    expect(await page.innerText(cell(asked))).toMatch(/\nnot found \(2 times\)$/);
    expect(await page.innerText(cell(never))).toBe('not yet');
    await page.fill('#list-clientId', before[0]);
    await page.selectOption('#list-status', before[1]);
    await page.fill('#list-from', before[2]);
    await page.fill('#list-to', before[3]);
  });

  it('re-drives one parked entry and discards another, each with its reason, and shows who decided', async () => {
    const store = gateway.app.get(LedgerStore);
    const parking = new ParkedEntries(store);
    const [good, bad] = [
      seeded(`console-parked-${RUN}`, Date.now() - 3_600_000),
      seeded(`console-parked-${RUN}`, Date.now() - 3_600_000, { clientId: 'jwt:app\ud800' }),
    ];
    await parking.park(good, { code: '23514', message: 'a constraint since relaxed' });
    await parking.park(bad, { code: '22P05', message: 'unsupported Unicode escape sequence' });
    const row = (entry: QueuedEntry) => `#parked-result tr:has(code:text-is("${entry.trackId}"))`;
    await page.click('#money-refresh');
    await page.locator(`${row(good)} form`).waitFor({ timeout: 20_000 });

    // No reason, nothing sent: the field says it is required.
    await page.click(`${row(bad)} button[value=discard]`);
    expect(await page.locator(`${row(bad)} form`).count()).toBe(1);
    await page.fill(`${row(good)} input`, 'the constraint was relaxed');
    await page.click(`${row(good)} button[value=redrive]`);
    await untilText(page, `${row(good)} td`, /re-driven by ops-console/);
    await page.fill(`${row(bad)} input`, 'a test client, nothing to bill');
    await page.click(`${row(bad)} button[value=discard]`);
    await untilText(page, `${row(bad)} td`, /discarded by ops-console/);

    expect((await store.facts(good.trackId))?.entries).toHaveLength(1);
    const facts = await store.db.query<{ action: string; client_id: string; reason: string }>(
      `SELECT action, client_id, reason FROM ledger_parked_actions a JOIN ledger_parked p USING (entry_sha256)
       WHERE p.track_id = ANY($1::text[]) ORDER BY action DESC`,
      [[good.trackId, bad.trackId]],
    );
    expect(facts).toEqual([
      { action: 'redriven', client_id: OPERATOR.clientId, reason: 'the constraint was relaxed' },
      { action: 'discarded', client_id: OPERATOR.clientId, reason: 'a test client, nothing to bill' },
    ]);
  });

  it('is readable on a 390-px phone screen, and axe-core finds no serious or critical fault', async () => {
    const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const audit = async () => {
      // Evaluated through the DevTools protocol, which the page's CSP does not govern (no inline script).
      await page.evaluate(axeSource);
      const found = await page.evaluate(async () => {
        const { axe } = globalThis as unknown as {
          axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> };
        };
        const result = await axe.run();
        return result.violations.map(({ id, impact, nodes }) => ({ id, impact, nodes: nodes.length }));
      });
      return found.filter(({ impact }) => impact === 'serious' || impact === 'critical');
    };
    expect(await audit()).toEqual([]);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    expect(await untilText(page, '#now-circuit', /^open$/)).toBe('open');
    // Nothing wider than the screen: no sideways scrolling of the page itself.
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);

    // The list: status, charged and spent on the screen (cards of labelled cells), not scrolled off.
    const tehranDay = (at: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Tehran' }).format(at);
    await page.fill('#list-from', tehranDay(seededAt - 29 * DAY_MS));
    await page.fill('#list-to', tehranDay(seededAt));
    await page.selectOption('#list-status', '');
    await page.click('#list-form button[type=submit]');
    await untilText(page, '#list-summary', /^Page 1: [1-9]/);
    const firstRow = page.locator('#list-result tbody tr').first();
    const headings = await page.locator('#list-result thead th').allTextContents();
    for (const label of ['status', 'charged', 'spent']) {
      const column = headings.findIndex((heading) => heading.startsWith(label));
      const box = (await firstRow.locator(`td:nth-child(${column + 1})`).boundingBox())!;
      expect({ label, left: box.x >= 0, right: box.x + box.width <= 390 }).toEqual({ label, left: true, right: true });
    }
    expect(await firstRow.locator('td[data-field=spent]').innerText()).toMatch(/^\d[\d,]* units?\b/);

    // The charts: labels drawn at 10 px or more on this screen, each axis with its unit, the
    // dates along the bottom apart from one another (the last two once overlapped).
    await page.locator('#spend-chart svg text.unit').waitFor();
    // Evaluated as text: the test's TypeScript has no DOM types.
    const ticks = await page.evaluate<
      Array<{ text: string; px: number; left: number; right: number; bottom: number }>
    >(`[...document.querySelectorAll('svg.bars text.tick')].map((text) => {
      const scale = text.getScreenCTM();
      const box = text.getBoundingClientRect();
      const px = parseFloat(getComputedStyle(text).fontSize) * Math.min(scale.a, scale.d);
      return { text: text.textContent, px, left: box.left, right: box.right, bottom: box.bottom };
    })`);
    expect(ticks.filter(({ px }) => px < 10)).toEqual([]);
    expect(await page.locator('#spend-chart svg text.unit').textContent()).toBe('units spent per day');
    expect(await page.locator('#errors-chart svg text.unit').textContent()).toBe('inquiries per day');
    const dates = ticks.filter(({ bottom }) => bottom === Math.max(...ticks.map((t) => t.bottom)));
    expect(dates.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < dates.length; i++) expect(dates[i].left).toBeGreaterThan(dates[i - 1].right);

    // The day shown below the charts is one where something went wrong, not a quiet yesterday.
    await page.fill('#trend-day', '');
    await page.dispatchEvent('#trend-day', 'change');
    await page.locator('#day-detail table').waitFor();
    expect(await audit()).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-390.png'), fullPage: true });
  }, 60_000);

  it('logged no key, and the page logged no error but the wrong key’s refusal', () => {
    expect(lines.text).toContain('"route":"/admin/status"');
    expect(lines.text).not.toContain(OPERATOR.key);
    expect(lines.text).not.toContain(WRONG_KEY);
    expect(pageErrors).toEqual([expect.stringMatching(/^Failed to load resource: .*401.* @ .*\/admin\/status$/)]);
  });
});
