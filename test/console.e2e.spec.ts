/**
 * The operators' console (docs/operations.md, "The console") in a real browser: Debian's
 * Chromium driven by playwright-core against a gateway with a real redis-server and the upstream
 * simulator, on the ops listener. The key is typed in, kept in sessionStorage and never in a URL
 * or a log line; the "Now" panel follows the token and the breaker as the simulator fails; a
 * wrong key is told so; no console error the test cannot account for; axe-core finds no serious
 * or critical accessibility fault at 1280×800 nor at 390 px. Screenshots go to os.tmpdir().
 *
 * The ledger and budget panels answer "not available in this build" here: their routes come with
 * the ledger and budgets (docs/api.md §6); the spec is extended when they are merged.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { JsonLogger } from '../src/observability/json-logger.js';
import { CHECK_SHAHKAR_PATH, GET_TOKEN_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { launchChromium, chromium, type Browser } from './support/chromium.js';
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
const WRONG_KEY = 'key-wrong-console-0123456789';
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
        API_KEYS: apiKeysWith(OPERATOR),
        // The breaker stays open for the test's look at it.
        UPSTREAM_CIRCUIT_RESET_MS: '60000',
      },
      { logger: new JsonLogger('info', lines) },
    );
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
      ledger: null,
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

  it('with a key typed in (keyboard only), shows the state, and follows the breaker and the token as the upstream fails', async () => {
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
    expect(await page.innerText('#now-postgres')).toBe('not configured');
    expect(await page.innerText('#now-held')).toBe('0');
    // Routes this build lacks are named, not called.
    expect(await untilText(page, '#budgets', /Not available in this build/)).toContain('GET /admin/budgets');
    expect(await page.innerText('#usage')).toContain('GET /admin/usage');
    expect(await page.innerText('#unknowns')).toContain('GET /admin/ledger');
    // The key: in this tab's sessionStorage, never in the address.
    expect(page.url()).toBe(consoleUrl);
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).toEqual([OPERATOR.key]);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-1280.png'), fullPage: true });

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

  it('shows budgets, usage, unknowns, one inquiry and a reconciliation report (stand-in answers until the ledger and budgets are merged)', async () => {
    // STAND-INS: this branch has no /admin/ledger, /admin/usage, /admin/budgets nor
    // /admin/reconciliations. The browser is given answers in their documented shapes
    // (docs/api.md §6) so the page's handling of them is proven here; once merged, this test is
    // to run against the real routes (real PostgreSQL) and these routes are to go.
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
    const clients = Array.from({ length: 10 }, (_, i) => `svc-${String(i).padStart(2, '0')}`);
    const budgets = {
      budgets: [
        {
          clientId: '*',
          budgets: [
            {
              window: 'daily',
              limitUnits: 1000,
              spentUnits: 850,
              reservedUnits: 3,
              remainingUnits: 147,
              resetsAt: `${day(-1)}T00:00:00.000Z`,
            },
          ],
        },
      ].concat(
        clients.map((clientId, i) => ({
          clientId,
          budgets: [
            {
              window: 'monthly',
              limitUnits: 2000,
              spentUnits: 150 * i,
              reservedUnits: 0,
              remainingUnits: 2000 - 150 * i,
              resetsAt: `${day(-20)}T00:00:00.000Z`,
            },
          ],
        })),
      ),
    };
    const usage = {
      timeZone: 'UTC',
      period: 'day',
      usage: clients.flatMap((clientId, c) =>
        Array.from({ length: 30 }, (_, d) => ({
          clientId,
          period: day(d),
          inquiries: 100 + c * 10 + d,
          succeeded: 90 + c * 10 + d,
          failed: 9,
          unknown: d === 3 ? 1 : 0,
          unitsSpent: 95 + c * 10 + d,
        })),
      ),
    };
    const trackId = '0b9a3c52-8d4e-4f7a-9c1e-2f5d6a7b8c9d';
    const entry = (id: string, kind: string, status: string, charged: string) => ({
      trackId: id,
      kind,
      clientId: 'svc-03',
      subjectSha256: 'a'.repeat(64),
      operation: 'shahkar',
      requestHandlingType: 'standard',
      status,
      charged,
      costUnits: 1,
      createdAt: `${day(3)}T10:00:00.000Z`,
      completedAt: `${day(3)}T10:00:01.000Z`,
      upstreamCode: 14,
      requestId: 'req-console-1',
    });
    const ndjson = (entries: object[]) => entries.map((e) => `${JSON.stringify(e)}\n`).join('');
    const uploads: Array<{ type: string | undefined; key: string | undefined; body: string }> = [];
    await page.route('**/admin/status', async (route) => {
      const response = await route.fetch();
      const status = (await response.json()) as { routes: Record<string, boolean> };
      for (const name of Object.keys(status.routes)) status.routes[name] = true;
      await route.fulfill({ response, json: status });
    });
    await page.route('**/admin/budgets', (route) => route.fulfill({ json: budgets }));
    await page.route('**/admin/usage?*', (route) => route.fulfill({ json: usage }));
    await page.route('**/admin/ledger?*', (route) => {
      const unknownOnly = new URL(route.request().url()).searchParams.get('status') === 'unknown';
      const entries = unknownOnly
        ? [entry(trackId, 'settled', 'unknown', 'possibly')]
        : [
            entry('11111111-2222-4333-8444-555555555555', 'settled', 'succeeded', 'yes'),
            entry(trackId, 'settled', 'unknown', 'possibly'),
            entry(trackId, 'reconciled', 'succeeded', 'yes'),
          ];
      return route.fulfill({ contentType: 'application/x-ndjson', body: ndjson(entries) });
    });
    await page.route('**/admin/reconciliations', (route) => {
      const headers = route.request().headers();
      uploads.push({
        type: headers['content-type'],
        key: headers['x-api-key'],
        body: route.request().postData() ?? '',
      });
      const list = (ids: string[]) => ({ count: ids.length, trackIds: ids, truncated: false });
      return route.fulfill({
        json: {
          rows: 2,
          chargedAndRecorded: list([trackId]),
          chargedNotInLedger: list(['99999999-2222-4333-8444-555555555555']),
          recordedNotCharged: list([]),
          chargedButRecordedNotCharged: list([]),
          resolved: list([trackId]),
          period: null,
        },
      });
    });

    await page.reload();
    // Budget bars: one <meter> per client and window, at spent + reserved.
    await page.locator('#budgets meter').first().waitFor();
    expect(await page.locator('#budgets meter').count()).toBe(11);
    expect(await page.getAttribute('#budgets tr[data-client="*"] meter', 'value')).toBe('853');
    expect(await page.getAttribute('#budgets tr[data-client="svc-03"] meter', 'aria-label')).toBe(
      'svc-03, monthly: 450 of 2000 units',
    );
    // The chart: drawn by uPlot (a canvas) with a legend of 30-day totals per client.
    await page.locator('#usage canvas').first().waitFor();
    expect(await page.locator('#usage .legend li').count()).toBe(10);
    await page.selectOption('#usage-measure', 'units');
    expect(await page.innerText('#usage .legend li >> nth=0')).toMatch(/^svc-00: 3,285$/);
    expect(await untilText(page, '#unknowns-count', /awaiting/)).toBe(
      '10 awaiting reconciliation in the last 30 days.',
    );

    await page.fill('#track-id', trackId);
    await page.press('#track-id', 'Enter');
    expect(await untilText(page, '#inquiry-status', /charged/)).toBe('succeeded (charged: yes)');
    expect(await page.locator('#inquiry-result tbody tr').count()).toBe(2);
    expect(await page.innerText('#inquiry-result')).toContain('req-console-1');
    expect(await page.innerText('#inquiry-result')).not.toContain('a'.repeat(13));

    await page.setInputFiles('#reconcile-file', {
      name: 'provider.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(`trackId\n${trackId}\n`),
    });
    await page.click('#reconcile-form button[type=submit]');
    await page.locator('#reconcile-report').waitFor();
    expect(uploads).toEqual([{ type: 'text/csv', key: OPERATOR.key, body: `trackId\n${trackId}\n` }]);
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedNotInLedger"]')).toMatch(
      /never sent by this gateway.*\t1$/,
    );
    await page.screenshot({ path: join(SCREENSHOTS, 'console-money.png'), fullPage: true });
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
