/**
 * Money from recorded prices (docs/decisions/0015-recorded-unit-price.md) on a real PostgreSQL
 * server and on PGlite: migration 9 over a ledger that holds an entry of the old code (it stays
 * unpriced), then usage, trends and the list read each entry's units × the price it recorded,
 * across two prices over time and a change of currency: never today's price, nothing converted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { UnitPrice } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import { InquiryList } from '../src/ledger/inquiry-list.js';
import { PgLedgerDatabase, type LedgerDatabase } from '../src/ledger/ledger-database.js';
import { MIGRATIONS } from '../src/ledger/ledger-migrations.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';
import { trends } from '../src/ledger/ledger-trends.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
import { moneyOf, sumOf } from '../src/ledger/money.js';
import { spentAndSavedJson, spentJson } from '../src/ledger/recorded-money.js';
import { StoreCipher } from '../src/store/store-cipher.js';
import { queuedEntry } from './support/ledger-entries.js';
import { closeLedger, ledgerEngines } from './support/ledger-engines.js';
import { PostgresServer } from './support/postgres-server.js';

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 9).toString('base64')) }]);
const MONTH = { from: new Date('2031-09-01T00:00:00Z'), to: new Date('2031-10-01T00:00:00Z') };
const at = (day: number) => new Date(Date.UTC(2031, 8, day, 12)).toISOString();
/** The prices over time: rials, then more rials with a fraction; then euros. Today's is the second. */
const FIRST = { unitPrice: '25000', currency: 'IRR' };
const SECOND = { unitPrice: '30000.5', currency: 'IRR' };
const EUROS = { unitPrice: '0.75', currency: 'EUR' };
const TODAY: UnitPrice = { amount: SECOND.unitPrice, currency: SECOND.currency };

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
  // The migration's cases need a ledger that starts empty: a database of their own on the server.
  const admin = new PgLedgerDatabase(server.url);
  await admin.query('CREATE DATABASE migration9');
  await admin.close();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(ledgerEngines(() => server.url, 'recorded-price'))('recorded unit prices on %s', (_name, open) => {
  let db: LedgerDatabase;
  let store: LedgerStore;
  const old = randomUUID();
  const paid = queuedEntry({ clientId: 'shop', createdAt: at(3), ...FIRST });
  const entries = [
    paid,
    // A failure spends nothing, whatever its price.
    queuedEntry({ clientId: 'shop', createdAt: at(3), status: 'failed', charged: 'no', costUnits: 3, ...FIRST }),
    // A reused answer: its savings at the price in force when it was answered.
    queuedEntry({
      clientId: 'shop',
      createdAt: at(3),
      charged: 'no',
      costUnits: 0,
      reusedFrom: paid.trackId,
      unitsSaved: 3,
      ...FIRST,
    }),
    queuedEntry({ clientId: 'shop', createdAt: at(4), costUnits: 3, ...SECOND }),
    // Unknown: possibly charged, so spent, at its own price.
    queuedEntry({
      clientId: 'shop',
      createdAt: at(4),
      kind: 'overdue',
      status: 'unknown',
      charged: 'possibly',
      ...SECOND,
    }),
    queuedEntry({ clientId: 'shop', createdAt: at(5), costUnits: 2, ...EUROS }),
  ];

  beforeAll(async () => {
    db = await open();
    await migrate(db);
    // The ledger as version 8 left it, with an entry the old code wrote (no price column at all).
    await db.query('ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_price');
    await db.query('ALTER TABLE ledger_entries DROP COLUMN unit_price, DROP COLUMN currency');
    await db.query('DELETE FROM ledger_migrations WHERE version = 9');
    await ensurePartitions(db, [MONTH.from]);
    await db.query(
      `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
         cost_units, created_at) VALUES ($1, 'settled', 'shop', 'shahkar', 'advanced', 'succeeded', 'yes', 3, $2)`,
      [old, at(2)],
    );
    store = new LedgerStore(db, cipher, 90);
  });
  afterAll(() => closeLedger(db));

  it('migrates the old entry to no price, and reads money as units × the price each entry recorded', async () => {
    expect(await migrate(db)).toEqual([9]);
    await store.insert(entries);

    const [row, ...more] = await usage(store, MONTH.from, MONTH.to, 'month');
    expect(more).toEqual([]);
    expect(row).toMatchObject({ inquiries: 7, failed: 1, unitsSpent: 10n, reused: 1, unitsSaved: 3n });
    // 1 × 25000 + (3 + 1) × 30000.5 in rials; the old entry's 3 units unpriced; 2 × 0.75 euros apart.
    expect(spentAndSavedJson(row.spent, row.saved, TODAY)).toEqual({
      spentAmount: '145002.0',
      currency: 'IRR',
      savedAmount: '75000.0',
      unpricedUnits: 3,
      otherCurrencies: [{ currency: 'EUR', spentAmount: '1.50', savedAmount: '0.00' }],
    });

    const byDay = (await trends(store, MONTH.from, MONTH.to, 'UTC')).rows.map((trend) => [
      trend.day,
      trend.unitsSpent,
      spentJson(trend.spent, TODAY),
    ]);
    expect(byDay).toEqual([
      ['2031-09-02', 3n, { spentAmount: '0.0', unpricedUnits: 3 }],
      ['2031-09-03', 1n, { spentAmount: '25000.0' }],
      ['2031-09-04', 4n, { spentAmount: '120002.0' }],
      ['2031-09-05', 2n, { spentAmount: '0.0', otherCurrencies: [{ currency: 'EUR', spentAmount: '1.50' }] }],
    ]);

    // Each row of the list (and of the export) carries its own recorded price; the old one none.
    const listed = await new InquiryList(store).page({ ...MONTH, clientId: 'shop' }, undefined, 10);
    const prices = new Map(listed.inquiries.map((entry) => [entry.trackId, [entry.unitPrice, entry.currency]]));
    expect(prices.get(old)).toEqual([undefined, undefined]);
    expect(prices.get(paid.trackId)).toEqual([FIRST.unitPrice, FIRST.currency]);
    expect(prices.get(entries[3].trackId)).toEqual([SECOND.unitPrice, SECOND.currency]);
  });

  it('refuses a malformed price at the database too (CHECK): both or neither, at most 6 decimals, a code', async () => {
    for (const [unitPrice, currency] of [
      ['1', null],
      ['0.1234567', 'IRR'],
      ['-1', 'IRR'],
      ['1', 'irr'],
    ]) {
      await expect(
        db.query(
          `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
             cost_units, created_at, unit_price, currency)
           VALUES ($1, 'settled', 'shop', 'shahkar', 'standard', 'succeeded', 'yes', 1, $2, $3, $4)`,
          [randomUUID(), at(6), unitPrice, currency],
        ),
      ).rejects.toMatchObject({ code: '23514', constraint: 'ledger_entries_price' });
    }
  });
});

/** The migration's and the sums' cases: their own month, apart from the cases above. */
const MARCH_2032 = { from: new Date('2032-03-01T00:00:00Z'), to: new Date('2032-04-01T00:00:00Z') };
const inMarch2032 = (day: number) => new Date(Date.UTC(2032, 2, day, 12)).toISOString();

/** Runs one migration's statements as migrate() does (comments out, split on ';'). */
async function apply(db: LedgerDatabase, version: number): Promise<void> {
  const sql = MIGRATIONS.find((m) => m.version === version)!.sql;
  for (const statement of sql
    .replace(/--.*$/gm, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean))
    await db.query(statement);
  await db.query('INSERT INTO ledger_migrations (version, name) VALUES ($1, $2)', [version, 'by hand']);
}

describe.each(ledgerEngines(() => server.url.replace(/\/postgres$/, '/migration9'), 'recorded-price-migration'))(
  'migration 9 and money read back on %s',
  (_n, open) => {
    let db: LedgerDatabase;
    let store: LedgerStore;

    beforeAll(async () => {
      db = await open();
      store = new LedgerStore(db, cipher, 90);
    });
    afterAll(() => closeLedger(db));

    it('migrates to 9 a ledger with rows written at every earlier version, each left unpriced', async () => {
      await db.query(`CREATE TABLE ledger_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      await apply(db, 1);
      await ensurePartitions(db, [new Date(inMarch2032(1))]);
      const insert = (cols: string, vals: string) =>
        db.query(
          `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
           cost_units, created_at${cols}) VALUES ($1, $2, 'old', 'shahkar', 'standard', $3, $4, 1, $5${vals})`,
          [randomUUID(), 'settled', 'succeeded', 'yes', inMarch2032(1)],
        );
      await insert('', '');
      await db.query(
        `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
         cost_units, created_at) VALUES ($1, 'reconciled', 'old', 'shahkar', 'standard', 'succeeded', 'yes', 1, $2)`,
        [randomUUID(), inMarch2032(1)],
      );
      for (const version of [2, 3, 4, 5, 6, 7, 8]) {
        await apply(db, version);
        await insert('', '');
      }
      await insert(', reused_from, units_saved, upstream_message', `, '${randomUUID()}', 3, 'x'`);
      expect(await migrate(db)).toEqual(MIGRATIONS.map((m) => m.version).filter((version) => version >= 9));
      const rows = await db.query<{ n: number; priced: number }>(
        'SELECT count(*)::int AS n, count(unit_price)::int AS priced FROM ledger_entries',
      );
      expect(rows).toEqual([{ n: 10, priced: 0 }]);
    });

    it('refuses a malformed price in a partition made before migration 9 and in one made after', async () => {
      // March 2032 existed before 9; April is made now, after it.
      await ensurePartitions(db, [new Date('2032-04-15T00:00:00Z')]);
      for (const day of [inMarch2032(2), '2032-04-15T12:00:00Z'])
        await expect(
          db.query(
            `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
             cost_units, created_at, unit_price, currency)
           VALUES ($1, 'settled', 'x', 'shahkar', 'standard', 'succeeded', 'yes', 1, $2, 0.1234567, 'IRR')`,
            [randomUUID(), day],
          ),
        ).rejects.toMatchObject({ code: '23514' });
    });

    it('reads one amount for prices equal in value but written at two scales (7.5 and 7.50): the sum of the entries’ own amounts', async () => {
      // COST_UNIT_PRICE may be written '7.5' one day and '7.50' the next: both are accepted and
      // recorded as written (canonicalAmount keeps the fraction). numeric groups them as one.
      const today: UnitPrice = { amount: '7.5', currency: 'EUR' };
      const a = queuedEntry({ clientId: 'scales', createdAt: inMarch2032(10), unitPrice: '7.5', currency: 'EUR' });
      const b = queuedEntry({ clientId: 'scales', createdAt: inMarch2032(10), unitPrice: '7.50', currency: 'EUR' });
      await store.insert([a]);
      await store.insert([b]);
      const listed = await new InquiryList(store).page({ ...MARCH_2032, clientId: 'scales' }, undefined, 10);
      // Each entry's own amount, as the list row (spentAmount) writes it: 7.5 and 7.50.
      const own = listed.inquiries.map((e) => moneyOf(1, { amount: e.unitPrice!, currency: e.currency! }).amount);
      expect(own.sort()).toEqual(['7.5', '7.50']);
      const expected = own.reduce((sum, amount) => sumOf(sum, amount), '0');
      expect(expected).toBe('15.00');

      const [row] = (await usage(store, MARCH_2032.from, MARCH_2032.to, 'month')).filter(
        (r) => r.clientId === 'scales',
      );
      const [trend] = (await trends(store, MARCH_2032.from, MARCH_2032.to, 'UTC')).rows.filter(
        (r) => r.clientId === 'scales',
      );
      expect({
        usage: spentAndSavedJson(row.spent, row.saved, today).spentAmount,
        trends: spentJson(trend.spent, today).spentAmount,
      }).toEqual({ usage: expected, trends: expected });
    });
  },
);
