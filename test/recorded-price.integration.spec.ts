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
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
import { ensurePartitions, migrate } from '../src/ledger/ledger-schema.js';
import { trends } from '../src/ledger/ledger-trends.js';
import { usage } from '../src/ledger/ledger-usage.js';
import { LedgerStore } from '../src/ledger/ledger.store.js';
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
