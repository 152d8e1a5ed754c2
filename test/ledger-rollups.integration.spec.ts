/**
 * The daily roll-ups (migration 15, src/ledger/ledger-rollups.ts) against a scan of the entries,
 * on a real PostgreSQL server and on PGlite: random histories of inquiries (prices recorded as
 * written, 7.5 and 7.50 apart, or none; reuse; failures with codes) whose later facts (a
 * settlement after an overdue entry, resolutions and their corrections) arrive in later batches,
 * some twice. After each history the roll-ups of every zone equal the aggregate of each
 * inquiry's latest fact, and usage, trends and the forecast's sums over random periods (not on
 * day boundaries) are what the scan of the entries answers. Lean: a few runs per engine.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { Secret } from '../src/config/secret.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import type { QueuedEntry } from '../src/ledger/ledger-entry.js';
import { rollupReads } from '../src/ledger/ledger-rollups.js';
import { dropExpiredPartitions } from '../src/ledger/ledger-schema.js';
import { latestFacts, REUSED_ANSWER } from '../src/ledger/ledger-rows.js';
import { trends, unitsSpentSince } from '../src/ledger/ledger-trends.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 7).toString('base64')) }]);
const ZONE = 'Asia/Tehran';
const HOUR_MS = 3_600_000;
/** The histories' four days, from a UTC midnight: Tehran's midnights fall at 20:30 UTC within them. */
const START = Date.parse('2032-03-01T00:00:00Z');
const PRICES = [null, ['7.5', 'USD'], ['7.50', 'USD'], ['20000', 'IRR'], ['0.125', 'IRR']] as const;

const inquiryArb = fc.record({
  // On the hour or half-hour now and then: the instants where days begin.
  at: fc.oneof(
    fc.integer({ min: 0, max: 96 }).map((h) => h * HOUR_MS + 30 * 60_000 * (h % 2)),
    fc.integer({ min: 0, max: 96 * HOUR_MS - 1 }),
  ),
  client: fc.constantFrom('shop-a', 'shop-b'),
  operation: fc.constantFrom('shahkar', 'iban'),
  first: fc.constantFrom('settled-ok', 'settled-failed', 'overdue', 'reused'),
  settledLater: fc.boolean(),
  corrections: fc.array(fc.boolean(), { maxLength: 3 }),
  price: fc.constantFrom(...PRICES),
  units: fc.integer({ min: 1, max: 5 }),
  code: fc.constantFrom(15, 17),
});

type Inquiry = typeof inquiryArb extends fc.Arbitrary<infer T> ? T : never;

/** An inquiry's facts in the order they are learned, each with the batch it arrives in. */
function factsOf(inquiry: Inquiry) {
  const trackId = randomUUID();
  const createdAt = new Date(START + inquiry.at).toISOString();
  const priced = inquiry.price ? { unitPrice: inquiry.price[0], currency: inquiry.price[1] } : {};
  const base = {
    trackId,
    createdAt,
    clientId: inquiry.client,
    operation: inquiry.operation,
    costUnits: inquiry.units,
    ...priced,
  } as const;
  const facts: QueuedEntry[] = [];
  if (inquiry.first === 'overdue') {
    facts.push(
      queuedEntry({
        ...base,
        kind: 'overdue',
        status: 'unknown',
        charged: 'possibly',
        completedAt: undefined,
        upstreamCode: undefined,
      }),
    );
    if (inquiry.settledLater) facts.push(queuedEntry({ ...base }));
  } else if (inquiry.first === 'settled-failed') {
    facts.push(
      queuedEntry({
        ...base,
        status: 'failed',
        charged: 'no',
        upstreamCode: inquiry.code,
        upstreamMessage: `no ${inquiry.code}`,
      }),
    );
  } else if (inquiry.first === 'reused') {
    facts.push(queuedEntry({ ...base, costUnits: 0, reusedFrom: randomUUID(), unitsSaved: inquiry.units }));
  } else facts.push(queuedEntry({ ...base }));
  inquiry.corrections.forEach((charged, i) =>
    facts.push(
      queuedEntry({
        ...base,
        kind: 'reconciled',
        revision: i + 1,
        status: charged ? 'succeeded' : 'failed',
        charged: charged ? 'yes' : 'no',
        resolvedBy: 'reconciliation',
      }),
    ),
  );
  return facts;
}

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(ledgerEngines(() => server.url, 'rollups'))('the roll-ups on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  beforeAll(async () => {
    db = await open();
    store = new LedgerStore(db, cipher, 90, [ZONE]);
    await store.ready();
  });
  afterAll(async () => {
    rollupReads.enabled = true;
    await closeLedger(db);
  });

  /** The roll-ups as rows, and the same aggregate of each inquiry's latest fact scanned from the entries. */
  async function rollupsAndScan() {
    const key = `zone, to_char(day, 'YYYY-MM-DD') AS day, client_id, operation, status, upstream_code, upstream_message, reused, unit_price, currency`;
    const order = 'ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10';
    const rolled = await db.query(
      `SELECT ${key}, n::text AS n, units_spent::text AS spent, units_saved::text AS saved FROM ledger_rollups WHERE n <> 0 ${order}`,
    );
    const scanned = await db.query(
      `SELECT ${key}, count(*)::text AS n, sum(spent)::text AS spent, sum(saved)::text AS saved FROM (
         SELECT z.zone, (f.created_at AT TIME ZONE z.zone)::date AS day, f.client_id, f.operation, f.status,
           CASE WHEN f.status = 'failed' THEN f.upstream_code END AS upstream_code,
           CASE WHEN f.status = 'failed' THEN f.upstream_message END AS upstream_message,
           f.reused, f.unit_price, f.currency, f.spent, f.saved
         FROM ${latestFacts(
           `e.created_at, e.client_id, e.operation, e.status, e.upstream_code, e.upstream_message, ${REUSED_ANSWER('e')} AS reused,
            e.unit_price::text AS unit_price, e.currency, CASE WHEN e.charged <> 'no' THEN e.cost_units ELSE 0 END AS spent,
            CASE WHEN ${REUSED_ANSWER('e')} THEN e.units_saved ELSE 0 END AS saved`,
           "'-infinity'",
           "'infinity'",
         ).replace(/\) latest$/, ') f')} CROSS JOIN ledger_rollup_zones z) g
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ${order}`,
    );
    return { rolled, scanned };
  }

  /** The console's reads over [from, to): from the roll-ups, or (reference) from the entries. */
  async function reads(from: Date, to: Date, fromRollups: boolean) {
    rollupReads.enabled = fromRollups;
    try {
      return {
        daily: await usage(store, from, to, 'day'),
        monthly: await usage(store, from, to, 'month'),
        trendsTehran: await trends(store, from, to, ZONE),
        trendsUtc: await trends(store, from, to, 'UTC'),
        spent: await unitsSpentSince(store, [from, new Date(from.getTime() + 25 * HOUR_MS)], to),
        spentTehran: await unitsSpentSince(store, [from, new Date(START + 44.5 * HOUR_MS)], to, ZONE),
      };
    } finally {
      rollupReads.enabled = true;
    }
  }

  it('agree with a scan of the entries on random histories, corrections appended later', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(inquiryArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 96 * HOUR_MS }), { minLength: 2, maxLength: 2 }),
        fc.integer({ min: 1, max: 4 }),
        async (inquiries, ends, batches) => {
          // Fact i of an inquiry arrives in batch i (or later: later batches may repeat it).
          const histories = inquiries.map(factsOf);
          for (let b = 0; b < batches + 3; b++) {
            const batch = histories.flatMap((facts) =>
              facts.filter((_, i) => i === b || (b === batches + 2 && i < b && i % 2 === 0)),
            );
            if (batch.length > 0) await store.insert(batch);
          }
          const { rolled, scanned } = await rollupsAndScan();
          expect(rolled).toEqual(scanned);
          const [from, to] = [Math.min(...ends), Math.max(...ends) + 1].map((t) => new Date(START + t));
          expect(await reads(from, to, true)).toEqual(await reads(from, to, false));
          // Whole days of both zones too: the roll-ups alone answer them.
          const whole = [new Date(START), new Date(START + 4 * 24 * HOUR_MS)] as const;
          expect(await reads(...whole, true)).toEqual(await reads(...whole, false));
        },
      ),
      { numRuns: 12 },
    );
  });

  it('leave with the entries of a month that retention drops, and keep the months it keeps', async () => {
    const april = [1, 2, 3].map((day) =>
      queuedEntry({
        clientId: 'shop-a',
        createdAt: `2032-04-0${day}T21:00:00.000Z`,
        unitPrice: '7.5',
        currency: 'USD',
      }),
    );
    await store.insert(april);
    const before = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM ledger_rollups WHERE n <> 0 AND day < '2032-04-01'",
    );
    expect(before[0].n).toBeGreaterThan(0);
    // March 2032 ends 400 days before this: its partition goes, April's stays.
    expect(
      await dropExpiredPartitions(db, new Date('2033-05-06T00:00:00Z'), { entriesDays: 400, resultsDays: 400 }),
    ).toContain('ledger_entries_203203');
    const { rolled, scanned } = await rollupsAndScan();
    expect(rolled).toEqual(scanned);
    expect(scanned.length).toBeGreaterThan(0);
  });
});
