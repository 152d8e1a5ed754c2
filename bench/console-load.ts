/**
 * `npm run bench:console`: how long the operators' console (docs/operations.md, "The console")
 * takes to load its data with 30 days × 20 clients of ledger entries. A scratch PostgreSQL
 * (test/support/postgres-server.ts) gets BENCH_CONSOLE_PER_DAY inquiries per client and day
 * on average (default 1 000: about 600 000 entries, 0.2 % of them `unknown`, 5 % failed), written
 * through the ledger's own store; a gateway (in-process store, 41 budgets, COST_UNIT_PRICE in
 * rials, Asia/Tehran on the Persian calendar) serves the page and the admin routes.
 *
 * Printed: each route the page calls, as Node's fetch sees it (median of 5), a page of the list
 * at its start, deep in the period (a cursor in the middle: keyset, no OFFSET) and filtered to
 * the rare `unknown`, the lookup of one trackId, and, when Debian's chromium is installed, the
 * page itself in headless Chromium: a reload until "Now", the money, the trends, the budgets and
 * the first page of the list are drawn (median of 5). BENCH_CONSOLE_SCREENSHOTS=<directory> also
 * saves console-desktop.png (1280 px wide, the whole page) and console-phone.png (390 px, its top
 * 1 600 px) there
 * (docs/console-desktop.png and docs/console-phone.png are taken so).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Secret } from '../src/config/secret.js';
import { PgLedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { addRefusals } from '../src/ledger/ledger-refusals.js';
import { encodeCursor } from '../src/ledger/inquiry-list.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { chromium, launchChromium } from '../test/support/chromium.js';
import { apiKeysWith, startGateway } from '../test/support/gateway.js';
import { PostgresServer } from '../test/support/postgres-server.js';
import { UpstreamSimulator } from '../test/upstream-simulator/upstream-simulator.js';
import { embeddedFigures } from './lib/console-embedded.js';
import { generateEntries } from './lib/console-entries.js';

const PER_DAY = Number(process.env.BENCH_CONSOLE_PER_DAY ?? 1_000);
/** BENCH_CONSOLE_ENTRIES: instead, this many entries over BENCH_CONSOLE_DAYS (365) days, made in SQL (lib/console-entries.ts). */
const SCALE_ENTRIES = Number(process.env.BENCH_CONSOLE_ENTRIES ?? 0);
const SCALE_DAYS = Number(process.env.BENCH_CONSOLE_DAYS ?? 365);
const DAYS = 30;
const CLIENTS = Array.from({ length: 20 }, (_, i) => `shop-${String(i + 1).padStart(2, '0')}`);
const RUNS = 5;
const DAY_MS = 86_400_000;
const OPERATOR = {
  clientId: 'finance',
  key: 'key-bench-console-0123456789',
  scopes: ['ledger:read', 'ledger:reconcile'],
};

/** When the bench's unit price changed from 20 000 to 25 000 rials: half-way through its 30 days. */
const PRICE_CHANGED_AT = Date.now() - 15 * DAY_MS;
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
      ...(unknown
        ? {}
        : {
            completedAt: createdAt,
            upstreamCode: failed ? 15 : 0,
            ...(failed ? { upstreamMessage: 'National code and mobile do not match' } : {}),
          }),
      requestId: randomUUID(),
      // The unit price recorded with each inquiry (decision 0015): changed mid-period, so the
      // aggregates sum two prices.
      unitPrice: dayStart < PRICE_CHANGED_AT ? '20000' : '25000',
      currency: 'IRR',
    };
  });
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/** Fills the year of BENCH_CONSOLE_ENTRIES with SQL, unless the database (BENCH_CONSOLE_URL) holds it already. */
async function fillAtScale(db: PgLedgerDatabase, store: LedgerStore, today: number): Promise<string> {
  await store.ready();
  const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_entries');
  if (n >= SCALE_ENTRIES * 0.99) console.log(`${n} ledger entries found (BENCH_CONSOLE_URL): reused`);
  else {
    const filling = performance.now();
    const written = await generateEntries(db, SCALE_ENTRIES - n, SCALE_DAYS, today, (line) => console.log(line));
    console.log(
      `${written} ledger entries (${SCALE_DAYS} days, SQL generate_series) written in ${ms(performance.now() - filling)}`,
    );
  }
  const [row] = await db.query<{ track_id: string }>(
    'SELECT track_id::text AS track_id FROM ledger_entries WHERE created_at >= $1 ORDER BY created_at LIMIT 1',
    [new Date(today - 10 * DAY_MS)],
  );
  return row.track_id;
}

async function main(): Promise<void> {
  // BENCH_CONSOLE_ENGINE=pglite: the embedded engine's figures at BENCH_CONSOLE_ENTRIES (lib/console-embedded.ts).
  if (process.env.BENCH_CONSOLE_ENGINE === 'pglite') return embeddedFigures(SCALE_ENTRIES || 300_000, SCALE_DAYS);
  const postgres = process.env.BENCH_CONSOLE_URL ? undefined : await PostgresServer.start();
  const url = process.env.BENCH_CONSOLE_URL ?? postgres!.url;
  const db = new PgLedgerDatabase(url);
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
  if (SCALE_ENTRIES > 0) sample = await fillAtScale(db, store, today);
  for (let d = 0; d < (SCALE_ENTRIES > 0 ? 0 : DAYS); d++) {
    const dayStart = firstDay + d * DAY_MS;
    // Today only up to now; Fridays quieter; client i makes 0.05 + 0.1i of PER_DAY (1 on average).
    const share = d === DAYS - 1 ? (Date.now() - dayStart) / DAY_MS : new Date(dayStart).getUTCDay() === 5 ? 0.6 : 1;
    for (const [i, clientId] of CLIENTS.entries()) {
      const entries = day(clientId, dayStart, Math.max(1, Math.round(PER_DAY * share * (0.05 + 0.1 * i))));
      sample ||= entries[1].trackId;
      for (let i = 0; i < entries.length; i += 1_000) inserted += await store.insert(entries.slice(i, i + 1_000));
    }
  }
  await db.query('ANALYZE ledger_entries');
  // Refusals as the trends count them: the busiest six clients meet their budgets most days,
  // two others their per-minute quotas now and then.
  const refusals = Array.from({ length: DAYS }, (_, d) => isoDay(firstDay + d * DAY_MS)).flatMap((day, d) => [
    ...CLIENTS.slice(14).map((clientId, i) => ({
      day,
      clientId,
      operation: 'shahkar' as const,
      reason: 'budget' as const,
      count: ((d * 7 + i * 13) % 40) * (i + 1),
    })),
    ...CLIENTS.slice(3, 5).map((clientId) => ({
      day,
      clientId,
      operation: 'iban' as const,
      reason: 'quota' as const,
      count: d % 4 === 0 ? 12 : 0,
    })),
  ]);
  await addRefusals(
    db,
    refusals.filter((r) => r.count > 0),
  );
  // The roll-ups in BUDGET_TIMEZONE, back-filled once when the zone is new (as the gateway's
  // start does it), timed here rather than in the gateway's first request.
  const zoned = performance.now();
  await new LedgerStore(db, new StoreCipher([]), 90, ['Asia/Tehran']).ready();
  console.log(`Roll-ups in Asia/Tehran ready (back-filled if new) in ${ms(performance.now() - zoned)}`);
  if (SCALE_ENTRIES === 0)
    console.log(
      `${inserted} ledger entries (${DAYS} days × ${CLIENTS.length} clients) and ${refusals.length} refusal counts written in ${ms(performance.now() - filling)}`,
    );

  const sim = new UpstreamSimulator();
  await sim.start(0);
  const gateway = await startGateway({
    UPSTREAM_BASE_URL: sim.baseUrl,
    API_KEYS: apiKeysWith(
      OPERATOR,
      ...CLIENTS.map((clientId) => ({ clientId, key: keyOf(clientId), scopes: ['kyc:shahkar'] })),
    ),
    LEDGER_DATABASE_URL: url,
    BUDGETS: JSON.stringify([
      ...CLIENTS.map((clientId) => ({ clientId, daily: 100, monthly: 2_000 })),
      { clientId: '*', daily: 2_000 },
    ]),
    COST_UNIT_PRICE: JSON.stringify({ amount: '25000', currency: 'IRR' }),
    BUDGET_TIMEZONE: 'Asia/Tehran',
    BUDGET_CALENDAR: 'persian',
  });
  // Today's budgets are Redis's (here in-process), not the ledger's: some inquiries through the
  // gateway move the bars (client i spends 3 + 4i of its 100 daily units).
  for (const [i, clientId] of CLIENTS.entries()) {
    const answers = await Promise.all(
      Array.from({ length: 3 + 4 * i }, () =>
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
  const middle = {
    createdAt: new Date(firstDay + 15 * DAY_MS).toISOString(),
    trackId: 'ffffffff-ffff-4fff-bfff-ffffffffffff',
  };
  const query = (params: Record<string, string>) => new URLSearchParams({ ...range, ...params }).toString();
  const routes: Array<[string, string]> = [
    ['GET /admin/status', '/admin/status'],
    ['GET /admin/forecast (41 budgets)', '/admin/forecast'],
    ['GET /admin/trends (30 days × 20 clients)', `/admin/trends?${query({})}`],
    ['GET /admin/usage?period=month', `/admin/usage?${query({ period: 'month' })}`],
    ['GET /admin/ledger/parked', `/admin/ledger/parked?${query({})}`],
    ['GET /admin/inquiries (first page, 50)', `/admin/inquiries?${query({})}`],
    ['GET /admin/inquiries (page in the middle)', `/admin/inquiries?${query({ after: encodeCursor(middle) })}`],
    ['GET /admin/inquiries?clientId=shop-07', `/admin/inquiries?${query({ clientId: 'shop-07' })}`],
    ['GET /admin/inquiries?status=unknown', `/admin/inquiries?${query({ status: 'unknown' })}`],
    [
      'GET /admin/ledger?trackId= (one inquiry)',
      `/admin/ledger?${new URLSearchParams({ ...range, trackId: sample }).toString()}`,
    ],
  ];
  // The page's reads at once, as the page issues them on a load (its panels draw as they arrive).
  const pageReads = [
    '/admin/status',
    '/admin/budgets',
    '/admin/forecast',
    `/admin/trends?${query({})}`,
    `/admin/usage?${new URLSearchParams({ from: isoDay(today - 31 * DAY_MS), to: isoDay(today + DAY_MS), period: 'month' }).toString()}`,
    `/admin/ledger/parked?${query({})}`,
    `/admin/inquiries?${query({})}`,
  ];
  await Promise.all(pageReads.map(get));
  const together = [];
  for (let run = 0; run < RUNS; run++) together.push(await timed(() => Promise.all(pageReads.map(get))));
  console.log(`\nEvery read of the page at once (${pageReads.length} routes, median of 5): ${ms(median(together))}`);
  console.log('\nThe routes, as Node fetch sees them (median of 5):');
  for (const [name, path] of routes) {
    await get(path);
    const times = [];
    for (let run = 0; run < RUNS; run++) times.push(await timed(() => get(path)));
    console.log(`  ${name.padEnd(44)} ${ms(median(times))}`);
  }
  if (SCALE_ENTRIES === 0) {
    const whole = await timed(() => get(`/admin/ledger?${new URLSearchParams(range).toString()}`));
    console.log(`  ${'GET /admin/ledger (the whole period, once)'.padEnd(44)} ${ms(whole)}`);
  } else {
    const yearRange = new URLSearchParams({
      from: isoDay(today - (SCALE_DAYS - 1) * DAY_MS),
      to: isoDay(today + DAY_MS),
    });
    for (const [name, path] of [
      ['GET /admin/trends (the whole year)', `/admin/trends?${yearRange.toString()}`],
      ['GET /admin/usage?period=month (the year)', `/admin/usage?${yearRange.toString()}&period=month`],
    ] as const) {
      await get(path);
      const times = [];
      for (let run = 0; run < RUNS; run++) times.push(await timed(() => get(path)));
      console.log(`  ${name.padEnd(44)} ${ms(median(times))}`);
    }
  }

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
        await page.locator('#company').waitFor({ timeout: 60_000 });
        await page.locator('#clients[data-savings="read"]').waitFor({ timeout: 60_000 });
        await page.locator('#spend-chart svg').waitFor({ timeout: 60_000 });
        await page.locator('#errors-chart svg').waitFor({ timeout: 60_000 });
        await page.locator('#list-summary').waitFor({ timeout: 60_000 });
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
      const pages = [];
      for (let run = 0; run < RUNS; run++) {
        pages.push(
          await timed(async () => {
            await page.click('#list-next');
            await page.locator('#list-summary', { hasText: `Page ${run + 2}:` }).waitFor({ timeout: 60_000 });
          }),
        );
      }
      console.log(`The list's next page, clicked until drawn (median of 5): ${ms(median(pages))}`);

      const directory = process.env.BENCH_CONSOLE_SCREENSHOTS;
      if (directory) {
        await page.reload();
        await drawn();
        await page.click(`#list-result tbody tr:nth-child(2) button`);
        await page.locator('#inquiry-status').waitFor({ timeout: 60_000 });
        await page.screenshot({ path: `${directory}/console-desktop.png`, fullPage: true });
        await page.setViewportSize({ width: 390, height: 844 });
        await page.reload();
        await drawn();
        // The phone's first screens (a full page of 20 clients' tables is taller than anyone scrolls).
        await page.screenshot({
          path: `${directory}/console-phone.png`,
          fullPage: true,
          clip: { x: 0, y: 0, width: 390, height: 1600 },
        });
        console.log(`Screenshots: ${directory}/console-desktop.png, ${directory}/console-phone.png`);
      }
    } finally {
      await browser.close();
    }
  } else console.log('\n(no /usr/bin/chromium: the page itself not measured)');

  await gateway.close();
  await sim.stop();
  await db.close();
  await postgres?.stop();
}

await main();
