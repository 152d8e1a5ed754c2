/**
 * The operators' console (docs/operations.md, "The console") in a real browser: Debian's
 * Chromium driven by playwright-core against a gateway with a real redis-server, the run's
 * PostgreSQL for its ledger (test/support/ledger-postgres.js), a budget and the upstream
 * simulator, on the ops listener. The key is typed in, kept in sessionStorage and never in a URL
 * or a log line; a budget bar moves after inquiries; one inquiry is found by trackId once the
 * drainer has written it; a reconciliation CSV is sent and its report shown; the "Now" panel
 * follows the token and the breaker as the simulator fails; a wrong key is told so; no console
 * error the test cannot account for; axe-core finds no serious or critical accessibility fault at
 * 1280×800 nor at 390 px. Screenshots go to os.tmpdir().
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
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
/** A client of its own (the run's PostgreSQL is shared with other specs): its budget and usage are this test's alone. */
const SHOP = { clientId: 'console-shop', key: 'key-console-shop-0123456789', scopes: ['kyc:shahkar'] };
const SHOP_DAILY_UNITS = 10;
const WRONG_KEY = 'key-wrong-console-0123456789';
/** The run's PostgreSQL when its binaries are installed (ledger-postgres.js), else PGlite in the process. */
const LEDGER_DATABASE = process.env.VGW_TEST_LEDGER_DATABASE_URL ? 'postgres' : 'embedded';
const SCREENSHOTS = join(tmpdir(), 'vgw-console-screenshots');

/** Every line the gateway logs, as written (JSON), to look for the keys in. */
class Lines extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
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
  /** Console errors and uncaught exceptions of the page, in order. */
  const pageErrors: string[] = [];
  /** `written` with each batch the gateway's drainer has inserted into PostgreSQL. */
  const drained = new EventEmitter();
  /** Resolves once every one of `trackIds` has a ledger entry in PostgreSQL (bounded, not a sleep). */
  const written = async (trackIds: string[]) => {
    const waiting = new Set(trackIds);
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
    gateway = await startGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        REDIS_URL: redis.url,
        OPS_PORT: String(opsPort),
        API_KEYS: apiKeysWith(OPERATOR, SHOP),
        BUDGETS: JSON.stringify([
          { clientId: SHOP.clientId, daily: SHOP_DAILY_UNITS },
          { clientId: '*', daily: 100_000 },
        ]),
        // The breaker stays open for the test's look at it.
        UPSTREAM_CIRCUIT_RESET_MS: '60000',
      },
      { logger: new JsonLogger('info', lines) },
    );
    // The drainer's writes observed (the same store instance it inserts through; the rows are real).
    const store = gateway.app.get(LedgerStore);
    const insert = store.insert.bind(store);
    store.insert = async (entries) => {
      const inserted = await insert(entries);
      drained.emit('written', entries);
      return inserted;
    };
    await untilStarted(gateway.app);
    await untilStoreReady(gateway);
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
    const chartLibrary = await fetch(`${consoleUrl}/vendor/uplot.js`);
    expect(chartLibrary.status).toBe(200);
    expect(chartLibrary.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
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
      routes: { ledger: true, usage: true, budgets: true, reconciliations: true },
      build: { version: expect.any(String) as unknown },
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
    expect(await page.innerText('#now-postgres')).toBe(`reachable (${LEDGER_DATABASE})`);
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
    // The chart: drawn by uPlot (a canvas) with 30-day totals per client, from GET /admin/usage.
    await page.locator('#usage canvas').first().waitFor();
    expect(await untilText(page, '#usage .legend li', new RegExp(`^${SHOP.clientId}: `))).toBe(`${SHOP.clientId}: 3`);
    expect(await untilText(page, '#unknowns-count', /awaiting reconciliation in the last 30 days\.$/)).toMatch(/^\d+ /);

    const [trackId] = answers;
    await page.fill('#track-id', trackId.toUpperCase());
    // The server picks the inquiry's entries: the page asks for that trackId, not the period.
    const lookup = page.waitForRequest((request) => new URL(request.url()).searchParams.get('trackId') === trackId);
    await page.press('#track-id', 'Enter');
    expect(new URL((await lookup).url()).pathname).toBe('/admin/ledger');
    expect(await untilText(page, '#inquiry-status', /charged/)).toBe('succeeded (charged: yes)');
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
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedAndRecorded"]')).toMatch(/\t1$/);
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedNotInLedger"]')).toMatch(
      /never sent by this gateway.*\t1$/,
    );
    expect(await page.innerText('#reconcile-report')).toContain(stranger);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-money.png'), fullPage: true });
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
