/**
 * The console's sign-in (docs/operations.md, "Signing in") in Chromium against a real OpenID
 * provider that this test starts (the `oidc-provider` package: authorization code with PKCE, a
 * public client, JWT access tokens for the console's audience, refresh tokens, RP-initiated
 * logout). One browser, one provider, one gateway for the file; a second gateway whose issuer is
 * down for the break-glass key. Covers: signing in (the name shown, the code gone from the
 * address), a dry run then confirm of a reconciliation (and a confirm refused with 409 when the
 * ledger changed meanwhile), who did what, an expired token renewed quietly, signing out, a user
 * without ledger:reconcile who sees no reconcile form and gets 403 from the route, and the key
 * when the provider is down. Screenshots go to os.tmpdir().
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';
import type { Page } from 'playwright-core';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { launchChromium, chromium, type Browser } from './support/chromium.js';
import { apiKeysWith, startGateway, type RunningGateway } from './support/gateway.js';
import { freePort } from './support/redis-server.js';
import { describeWith } from './support/tools.js';

const CLIENT_ID = 'vgw-console';
const AUDIENCE = 'https://vgw.example/console-api';
/** Access tokens live 8 s: the page's quiet renewal is seen within the test. */
const ACCESS_TOKEN_SECONDS = 8;
const USERS: Record<string, { name: string; scope: string }> = {
  parisa: { name: 'Parisa Rahimi', scope: 'ledger:read ledger:reconcile' },
  reza: { name: 'Reza Karimi', scope: 'ledger:read' },
};
const BREAK_GLASS = { clientId: 'ops-break-glass', key: 'key-ops-break-glass-0123456789', scopes: ['ledger:read'] };
const FINANCE_KEY = {
  clientId: 'finance-robot',
  key: 'key-finance-robot-0123456789',
  scopes: ['ledger:read', 'ledger:reconcile'],
};
const SESSION_ITEM = 'vgw-console-oidc';
const SCREENSHOTS = join(tmpdir(), 'vgw-console-screenshots');

/** An `unknown` inquiry of the last hour, at 25 000 IRR a unit: the provider's list resolves it. */
function unknownInquiry(clientId: string): QueuedEntry {
  const at = new Date(Date.now() - 3_600_000).toISOString();
  return {
    trackId: randomUUID(),
    kind: 'overdue',
    clientId,
    operation: 'shahkar',
    requestHandlingType: 'advanced',
    status: 'unknown',
    charged: 'possibly',
    costUnits: 3,
    createdAt: at,
    unitPrice: '25000',
    currency: 'IRR',
  };
}

/** The OpenID provider: any password signs in; each user's grant holds the scopes USERS gives. */
function openIdProvider(issuer: string, consoleUrl: string): Provider {
  const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        token_endpoint_auth_method: 'none',
        redirect_uris: [consoleUrl],
        post_logout_redirect_uris: [consoleUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...key, kid: 'test-key', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: ['console-sign-in-test-cookie-key'] },
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id, name: USERS[id]?.name ?? id }) }),
    features: {
      devInteractions: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'ledger:read ledger:reconcile',
          audience: AUDIENCE,
          accessTokenTTL: ACCESS_TOKEN_SECONDS,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // Refresh tokens for the public client (a company's provider is configured so; the default asks offline_access).
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    extraTokenClaims: (_ctx, token) => ({ name: USERS[(token as { accountId?: string }).accountId ?? '']?.name }),
    // No consent page: each user is granted what USERS gives them.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const { Grant } = ctx.oidc.provider;
      const accountId = ctx.oidc.session!.accountId!;
      const grant = new Grant({ clientId: ctx.oidc.client!.clientId, accountId });
      grant.addOIDCScope('openid profile');
      const held = USERS[accountId]?.scope ?? '';
      grant.addResourceScope(AUDIENCE, held);
      // What the user may not have is refused outright (no consent page offering it).
      const refused = ['ledger:read', 'ledger:reconcile'].filter((scope) => !held.split(' ').includes(scope));
      if (refused.length > 0) grant.rejectResourceScope(AUDIENCE, refused.join(' '));
      await grant.save();
      return grant;
    },
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings (evaluated through DevTools, which the page's CSP does not govern). */
async function audit(page: Page): Promise<Array<{ id: string; nodes: number }>> {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const { axe } = globalThis as unknown as {
      axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> };
    };
    return (await axe.run()).violations.map(({ id, impact, nodes }) => ({ id, impact, nodes: nodes.length }));
  });
  return found
    .filter(({ impact }) => impact === 'serious' || impact === 'critical')
    .map(({ id, nodes }) => ({ id, nodes }));
}

async function untilText(page: Page, selector: string, pattern: RegExp, timeout = 20_000): Promise<string> {
  const locator = page.locator(selector).filter({ hasText: pattern });
  await locator.waitFor({ state: 'visible', timeout });
  return locator.innerText();
}

describeWith(chromium(), 'console sign-in with an OpenID provider', (executablePath) => {
  let sim: UpstreamSimulator;
  let idp: Server;
  let issuer: string;
  let gateway: RunningGateway;
  let downGateway: RunningGateway;
  let consoleUrl: string;
  let downConsoleUrl: string;
  let opsUrl: string;
  let browser: Browser;
  let page: Page;
  let store: LedgerStore;
  const pageErrors: string[] = [];

  // The provider's development warnings (in-memory adapter, dev interactions: as a test wants) unprinted.
  const [warn, info] = [console.warn, console.info];
  beforeAll(async () => {
    console.warn = (...args: unknown[]) => {
      if (!String(args[0]).startsWith('oidc-provider ')) warn(...args);
    };
    console.info = (...args: unknown[]) => {
      if (!String(args[0]).startsWith('oidc-provider ')) info(...args);
    };
    mkdirSync(SCREENSHOTS, { recursive: true });
    sim = new UpstreamSimulator();
    await sim.start();
    const [idpPort, opsPort, downOpsPort, closedPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    issuer = `http://127.0.0.1:${idpPort}`;
    opsUrl = `http://127.0.0.1:${opsPort}`;
    consoleUrl = `${opsUrl}/console`;
    downConsoleUrl = `http://127.0.0.1:${downOpsPort}/console`;
    idp = openIdProvider(issuer, consoleUrl).listen(idpPort, '127.0.0.1');
    const common = { UPSTREAM_BASE_URL: sim.baseUrl, API_KEYS: apiKeysWith(BREAK_GLASS, FINANCE_KEY) };
    const oidc = { CONSOLE_OIDC_CLIENT_ID: CLIENT_ID, CONSOLE_OIDC_AUDIENCE: AUDIENCE };
    [gateway, downGateway] = await Promise.all([
      startGateway({ ...common, ...oidc, OPS_PORT: String(opsPort), CONSOLE_OIDC_ISSUER: issuer }),
      startGateway({
        ...common,
        ...oidc,
        OPS_PORT: String(downOpsPort),
        CONSOLE_OIDC_ISSUER: `http://127.0.0.1:${closedPort}`,
      }),
    ]);
    store = gateway.app.get(LedgerStore);
    browser = await launchChromium(executablePath);
    page = await browser.context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`uncaught: ${error.message}`));
  }, 120_000);

  afterAll(async () => {
    [console.warn, console.info] = [warn, info];
    await browser?.close();
    await Promise.all([gateway?.close(), downGateway?.close()]);
    await new Promise((resolve) => (idp ? idp.close(resolve) : resolve(undefined)));
    await sim?.stop();
  }, 60_000);

  async function signIn(login: string): Promise<void> {
    await page.goto(consoleUrl);
    await page.click('#sign-in');
    await page.waitForURL(`${issuer}/**`);
    await page.fill('input[name=login]', login);
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await page.waitForURL(consoleUrl);
    await untilText(page, '#who-name', new RegExp(USERS[login].name));
  }

  const session = () =>
    page.evaluate<{ accessToken: string; expiresAt: number } | null>(
      `JSON.parse(sessionStorage.getItem('${SESSION_ITEM}'))`,
    );

  it("signs in through the provider, reconciles a month (dry run, then confirm) and shows the operator's name on it", async () => {
    const served = await fetch(consoleUrl);
    // The page may call the provider's token endpoint, and nothing else off this origin.
    expect(served.headers.get('content-security-policy')).toContain(`connect-src 'self' ${issuer}`);
    await signIn('parisa');
    expect(page.url()).toBe(consoleUrl);
    await page.locator('#now-facts').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.isVisible('#reconcile-form')).toBe(true);

    // A file the route refuses: its errors beside the form, nothing sent further.
    await page.setInputFiles('#reconcile-file', {
      name: 'wrong.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('id,amount\n1,2\n'),
    });
    await page.click('#reconcile-form button[type=submit]');
    expect(await untilText(page, '#reconcile-errors', /trackId/)).toContain('400');

    const unknown = unknownInquiry(`console-sign-in-${randomUUID().slice(0, 8)}`);
    expect(await store.insert([unknown])).toBe(1);
    const csv = { name: 'provider.csv', mimeType: 'text/csv', buffer: Buffer.from(`trackId\n${unknown.trackId}\n`) };
    await page.setInputFiles('#reconcile-file', csv);
    await page.click('#reconcile-form button[type=submit]');
    await page.locator('#reconcile-report').waitFor({ timeout: 20_000 });
    expect(await page.innerText('#reconcile-report tr[data-finding="resolved"]')).toMatch(/\t1\t3\t75,?000 IRR$/);
    // The ledger changes between the dry run and the confirmation (the same list applied by a key):
    // the confirmation is refused and the page shows the new report to confirm.
    const applied = await fetch(`${opsUrl}/admin/reconciliations`, {
      method: 'POST',
      headers: { 'x-api-key': FINANCE_KEY.key, 'content-type': 'text/csv' },
      body: csv.buffer,
    });
    expect(applied.status).toBe(200);
    await page.click('#reconcile-confirm');
    await untilText(page, '#reconcile-result', /ledger changed since that dry run/);
    expect(await page.innerText('#reconcile-report tr[data-finding="resolved"]')).toMatch(/\t0\t0\t–$/);
    expect(await page.innerText('#reconcile-report tr[data-finding="chargedAndRecorded"]')).toMatch(/\t1\t3\t/);
    await page.click('#reconcile-confirm');
    await page.locator('#reconcile-applied').waitFor({ timeout: 20_000 });
    const who = await untilText(page, '#actions-result tr[data-action="reconciliation"]', /Parisa Rahimi/);
    expect(who).toContain('Parisa Rahimi (signed in)');
    expect(await page.innerText('#actions-result')).toContain(`${FINANCE_KEY.clientId} (API key)`);
    // An export with the operator's token is recorded as theirs: their sub and name, its filters, no end user.
    const token = (await session())!.accessToken;
    const day = new Date().toISOString().slice(0, 10);
    const exported = await fetch(`${opsUrl}/admin/ledger?from=${day}&to=2100-01-01`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(exported.status).toBe(200);
    await exported.text();
    const actions = await fetch(`${opsUrl}/admin/operator-actions?limit=1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(((await actions.json()) as { actions: unknown[] }).actions).toEqual([
      expect.objectContaining({
        action: 'export',
        kind: 'operator',
        id: 'parisa',
        name: 'Parisa Rahimi',
        summary: { format: 'ndjson', from: day, to: '2100-01-01' },
      }),
    ]);
    await page.screenshot({ path: join(SCREENSHOTS, 'console-sign-in.png'), fullPage: true });
    // Signed in, with the report, its tables and who did what on the page: no serious fault, wide or narrow.
    expect(await audit(page)).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await audit(page)).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 800 });
  }, 90_000);

  it('renews the access token quietly before it expires, and an expired one on the next call', async () => {
    const before = (await session())!.accessToken;
    const quiet = await page.waitForRequest(
      (request) => request.url().startsWith(issuer) && (request.postData() ?? '').includes('grant_type=refresh_token'),
      { timeout: ACCESS_TOKEN_SECONDS * 2000 },
    );
    await quiet.response();
    await page.waitForFunction(
      (old) =>
        (JSON.parse(sessionStorage.getItem('vgw-console-oidc') ?? 'null') as { accessToken?: string } | null)
          ?.accessToken !== old,
      before,
    );
    // Expired in the tab (a laptop that slept): the next call renews first, and is answered.
    await page.evaluate(`(() => {
      const s = JSON.parse(sessionStorage.getItem('${SESSION_ITEM}'));
      sessionStorage.setItem('${SESSION_ITEM}', JSON.stringify({ ...s, expiresAt: Date.now() - 1000 }));
    })()`);
    const renewal = page.waitForRequest((request) => (request.postData() ?? '').includes('grant_type=refresh_token'));
    const status = page.waitForResponse((response) => response.url().endsWith('/admin/status'));
    await page.click('#now-refresh');
    await renewal;
    expect((await status).status()).toBe(200);
    expect((await session())!.expiresAt).toBeGreaterThan(Date.now());
  }, 60_000);

  it('signs out at the provider too, and the page offers sign-in again', async () => {
    await page.click('#sign-out');
    await page.waitForURL(`${issuer}/**`);
    await page.click('button[name=logout]');
    await page.waitForURL(`${consoleUrl}**`);
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    expect(await page.isHidden('#who')).toBe(true);
    expect(await session()).toBeNull();
  }, 60_000);

  it('a user without ledger:reconcile sees no reconcile form, and the route answers 403', async () => {
    await signIn('reza');
    await page.locator('#reconcile-denied').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.isHidden('#reconcile-form')).toBe(true);
    const token = (await session())!.accessToken;
    const refused = await fetch(`${opsUrl}/admin/reconciliations?dryRun=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
      body: `trackId\n${randomUUID()}\n`,
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(((await refused.json()) as { code: string }).code).toBe('forbidden');
    // The same token on an app's route: an operator's token is not an app's JWT.
    const inquiry = await fetch(`${gateway.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ nationalCode: '0012345679', mobile: '09121234567' }),
    });
    expect(inquiry.status).toBe(403);
    await page.click('#sign-out');
    await page.waitForURL(`${issuer}/**`);
    await page.click('button[name=logout]');
    await page.waitForURL(`${consoleUrl}**`);
  }, 60_000);

  it('offers the break-glass key, and says why, when the provider cannot be reached', async () => {
    await page.goto(downConsoleUrl);
    expect(await untilText(page, '#sign-in-note', /cannot be reached/)).toContain('Break-glass');
    expect(await page.isHidden('#sign-in')).toBe(true);
    await page.fill('#api-key', BREAK_GLASS.key);
    await page.click('#key-form button[type=submit]');
    await page.locator('#now-facts').waitFor({ state: 'visible', timeout: 20_000 });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
