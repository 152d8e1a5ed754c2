/**
 * `npm run bench:console`: how long the operators' console (docs/operations.md, "The console")
 * takes to load its data with 30 days × 10 clients of ledger entries. A scratch PostgreSQL
 * (test/support/postgres-server.ts) gets BENCH_CONSOLE_PER_DAY inquiries per client and day
 * on average (default 1 000: about 290 000 entries, 0.2 % of them `unknown`), written through the ledger's own
 * store; a gateway (in-process store, 11 budgets) serves the page and the admin routes.
 *
 * Printed: each route the page calls, as Node's fetch sees it (median of 5), the lookup of one
 * trackId with the `trackId` filter and without it (the whole period streamed, as the page did
 * before), and, when Debian's chromium is installed, the page itself in headless Chromium: a
 * reload until "Now", the budget bars, the 30-day chart and the unknowns are drawn (median of
 * 5), and one trackId looked up. BENCH_CONSOLE_SCREENSHOT=<file.png> also saves the page at
 * 1280×800 with a lookup and a reconciliation report (docs/console.png is taken so).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { chromium, launchChromium } from '../test/support/chromium.js';
import { apiKeysWith, startGateway } from '../test/support/gateway.js';
import { PostgresServer } from '../test/support/postgres-server.js';
import { UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';

const PER_DAY = Number(process.env.BENCH_CONSOLE_PER_DAY ?? 1_000);
const DAYS = 30;
const CLIENTS = Array.from({ length: 10 }, (_, i) => `shop-${String(i + 1).padStart(2, '0')}`);
const RUNS = 5;
const DAY_MS = 86_400_000;
const OPERATOR = {
  clientId: 'finance',
  key: 'key-bench-console-0123456789',
  scopes: ['ledger:read', 'ledger:reconcile'],
};

const keyOf = (clientId: string) => `key-bench-${clientId}-0123456789`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (value: number) => `${value.toFixed(0)} ms`;
const isoDay = (at: number) => new Date(at).toISOString().slice(0, 10);

/** One client's day of inquiries: mostly succeeded, 5 % failed, 1 in 500 unknown (never settled). */
function day(clientId: string, dayStart: number, count: number): QueuedEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const createdAt = new Date(dayStart + Math.floor((i * DAY_MS) / count)).toISOString();
    const unknown = i % 500 === 7;
    const failed = !unknown && i % 20 === 3;
    return {
      trackId: randomUUID(),
      kind: unknown ? 'overdue' : 'settled',
      clientId,
      operation: i % 3 === 0 ? 'iban' : 'shahkar',
      requestHandlingType: i % 10 === 0 ? 'advanced' : 'standard',
      status: unknown ? 'unknown' : failed ? 'failed' : 'succeeded',
      charged: unknown ? 'possibly' : failed ? 'no' : 'yes',
      costUnits: i % 10 === 0 ? 3 : 1,
      createdAt,
      ...(unknown ? {} : { completedAt: createdAt, upstreamCode: failed ? 4001 : 200 }),
      requestId: randomUUID(),
    };
  });
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

async function main(): Promise<void> {
  const postgres = await PostgresServer.start();
  const db = new PgLedgerDatabase(postgres.url);
  const store = new LedgerStore(
    db,
    new StoreCipher([{ id: 'k', key: new Secret(Buffer.alloc(32).toString('base64')) }]),
    90,
  );
  const today = Date.parse(`${isoDay(Date.now())}T00:00:00Z`);
  // Up to the present moment: nothing in the future, whatever the hour the bench runs.
  const firstDay = today - (DAYS - 1) * DAY_MS;
  let inserted = 0;
  let sample = '';
  const filling = performance.now();
  for (let d = 0; d < DAYS; d++) {
    const dayStart = firstDay + d * DAY_MS;
    // Today only up to now; Fridays quieter; client i makes 0.55 + 0.1i of PER_DAY (1 on average).
    const share = d === DAYS - 1 ? (Date.now() - dayStart) / DAY_MS : new Date(dayStart).getUTCDay() === 5 ? 0.6 : 1;
    for (const [i, clientId] of CLIENTS.entries()) {
      const entries = day(clientId, dayStart, Math.max(1, Math.round(PER_DAY * share * (0.55 + 0.1 * i))));
      sample ||= entries[1].trackId;
      for (let i = 0; i < entries.length; i += 1_000) inserted += await store.insert(entries.slice(i, i + 1_000));
    }
  }
  await db.query('ANALYZE ledger_entries');
  console.log(
    `${inserted} ledger entries (${DAYS} days × ${CLIENTS.length} clients) written in ${ms(performance.now() - filling)}`,
  );

  const sim = new UpstreamSimulator();
  await sim.start(0);
  const gateway = await startGateway({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(
      OPERATOR,
      ...CLIENTS.map((clientId) => ({ clientId, key: keyOf(clientId), scopes: ['kyc:shahkar'] })),
    ),
    LEDGER_DATABASE_URL: postgres.url,
    BUDGETS: JSON.stringify([
      ...CLIENTS.map((clientId) => ({ clientId, daily: 100, monthly: 2_000 })),
      { clientId: '*', daily: 1_000 },
    ]),
  });
  // Today's budgets are Redis's (here in-process), not the ledger's: some inquiries through the
  // gateway move the bars (client i spends 3 + 9i of its 100 daily units).
  for (const [i, clientId] of CLIENTS.entries()) {
    const answers = await Promise.all(
      Array.from({ length: 3 + 9 * i }, () =>
        fetch(`${gateway.url}/v1/kyc/shahkar`, {
          method: 'POST',
          headers: { 'x-api-key': keyOf(clientId), 'content-type': 'application/json' },
          body: JSON.stringify({ nationalCode: '0499370899', mobileNumber: '09121234567' }),
        }),
      ),
    );
    if (answers.some((answer) => answer.status !== 200)) throw new Error(`an inquiry of ${clientId} failed`);
  }
  const get = async (path: string) => {
    const answer = await fetch(`${gateway.url}${path}`, { headers: { 'x-api-key': OPERATOR.key } });
    if (!answer.ok) throw new Error(`${path}: ${answer.status}`);
    return answer.text();
  };
  const range = { from: isoDay(firstDay), to: isoDay(today + DAY_MS) };
  const routes: Array<[string, string]> = [
    ['GET /admin/status', '/admin/status'],
    ['GET /admin/budgets', '/admin/budgets'],
    [
      'GET /admin/usage (30 days × 10 clients)',
      `/admin/usage?${new URLSearchParams({ ...range, period: 'day' }).toString()}`,
    ],
    [
      'GET /admin/ledger?status=unknown',
      `/admin/ledger?${new URLSearchParams({ ...range, status: 'unknown' }).toString()}`,
    ],
    [
      'GET /admin/ledger?trackId= (one inquiry)',
      `/admin/ledger?${new URLSearchParams({ ...range, trackId: sample }).toString()}`,
    ],
  ];
  console.log('\nThe routes, as Node fetch sees them (median of 5):');
  for (const [name, path] of routes) {
    await get(path);
    const times = [];
    for (let run = 0; run < RUNS; run++) times.push(await timed(() => get(path)));
    console.log(`  ${name.padEnd(44)} ${ms(median(times))}`);
  }
  const whole = await timed(() => get(`/admin/ledger?${new URLSearchParams(range).toString()}`));
  console.log(`  ${'GET /admin/ledger (the whole period, once)'.padEnd(44)} ${ms(whole)}`);

  const executable = chromium();
  if (executable) {
    const browser = await launchChromium(executable);
    try {
      const page = await browser.context.newPage();
      await page.goto(`${gateway.url}/console`);
      await page.fill('#api-key', OPERATOR.key);
      await page.press('#api-key', 'Enter');
      const drawn = async () => {
        await page.locator('#now-facts').waitFor({ timeout: 60_000 });
        await page.locator('#usage canvas').waitFor({ timeout: 60_000 });
        await page.locator('#unknowns-count').waitFor({ timeout: 60_000 });
        await page
          .locator('#budgets meter')
          .nth(CLIENTS.length * 2)
          .waitFor({ timeout: 60_000 });
      };
      await drawn();
      const loads = [];
      for (let run = 0; run < RUNS; run++) loads.push(await timed(async () => (await page.reload(), await drawn())));
      console.log(
        `\nThe page in headless Chromium, reloaded until every panel is drawn (median of 5): ${ms(median(loads))}`,
      );
      console.log(`  (each run: ${loads.map((t) => t.toFixed(0)).join(', ')} ms)`);
      const lookups = [];
      for (let run = 0; run < RUNS; run++) {
        lookups.push(
          await timed(async () => {
            await page.fill('#track-id', sample);
            await page.press('#track-id', 'Enter');
            await page.locator('#inquiry-status').waitFor({ timeout: 60_000 });
          }),
        );
      }
      console.log(`One trackId looked up (median of 5): ${ms(median(lookups))}`);

      const screenshot = process.env.BENCH_CONSOLE_SCREENSHOT;
      if (screenshot) {
        await page.setInputFiles('#reconcile-file', {
          name: 'provider.csv',
          mimeType: 'text/csv',
          buffer: Buffer.from(`trackId,amount\n${sample},1\n${randomUUID()},1\n`),
        });
        await page.click('#reconcile-form button[type=submit]');
        await page.locator('#reconcile-report').waitFor({ timeout: 60_000 });
        await page.screenshot({ path: screenshot, fullPage: true });
        console.log(`Screenshot: ${screenshot}`);
      }
    } finally {
      await browser.close();
    }
  } else console.log('\n(no /usr/bin/chromium: the page itself not measured)');

  await gateway.close();
  await sim.stop();
  await db.close();
  await postgres.stop();
}

await main();
