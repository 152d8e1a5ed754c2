/**
 * Review of recorded unit prices (docs/decisions/0015-recorded-unit-price.md) on a real
 * PostgreSQL server and on PGlite: migration 9 over a ledger that grew through every earlier
 * migration, the CHECK on partitions made before and after it, and money read back by usage and
 * trends against the entries' own amounts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { UnitPrice } from '../src/config/budget-config.js';
import { Secret } from '../src/config/secret.js';
import { InquiryList } from '../src/ledger/inquiry-list.js';
import type { LedgerDatabase } from '../src/ledger/ledger-database.js';
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

const cipher = new StoreCipher([{ id: 'k1', key: new Secret(Buffer.alloc(32, 5).toString('base64')) }]);
const MONTH = { from: new Date('2032-03-01T00:00:00Z'), to: new Date('2032-04-01T00:00:00Z') };
const at = (day: number) => new Date(Date.UTC(2032, 2, day, 12)).toISOString();

let server: PostgresServer;
beforeAll(async () => {
  server = await PostgresServer.start();
});
afterAll(async () => {
  await server?.stop();
});

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

describe.each(ledgerEngines(() => server.url, 'recorded-price-review'))(
  'recorded prices reviewed on %s',
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
      await ensurePartitions(db, [new Date(at(1))]);
      const insert = (cols: string, vals: string) =>
        db.query(
          `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
           cost_units, created_at${cols}) VALUES ($1, $2, 'old', 'shahkar', 'standard', $3, $4, 1, $5${vals})`,
          [randomUUID(), 'settled', 'succeeded', 'yes', at(1)],
        );
      await insert('', '');
      await db.query(
        `INSERT INTO ledger_entries (track_id, kind, client_id, operation, request_handling_type, status, charged,
         cost_units, created_at) VALUES ($1, 'reconciled', 'old', 'shahkar', 'standard', 'succeeded', 'yes', 1, $2)`,
        [randomUUID(), at(1)],
      );
      for (const version of [2, 3, 4, 5, 6, 7, 8]) {
        await apply(db, version);
        await insert('', '');
      }
      await insert(', reused_from, units_saved, upstream_message', `, '${randomUUID()}', 3, 'x'`);
      expect(await migrate(db)).toEqual([9]);
      const rows = await db.query<{ n: number; priced: number }>(
        'SELECT count(*)::int AS n, count(unit_price)::int AS priced FROM ledger_entries',
      );
      expect(rows).toEqual([{ n: 10, priced: 0 }]);
    });

    it('refuses a malformed price in a partition made before migration 9 and in one made after', async () => {
      // March 2032 existed before 9; April is made now, after it.
      await ensurePartitions(db, [new Date('2032-04-15T00:00:00Z')]);
      for (const day of [at(2), '2032-04-15T12:00:00Z'])
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
      const a = queuedEntry({ clientId: 'scales', createdAt: at(10), unitPrice: '7.5', currency: 'EUR' });
      const b = queuedEntry({ clientId: 'scales', createdAt: at(10), unitPrice: '7.50', currency: 'EUR' });
      await store.insert([a]);
      await store.insert([b]);
      const listed = await new InquiryList(store).page({ ...MONTH, clientId: 'scales' }, undefined, 10);
      // Each entry's own amount, as the list row (spentAmount) writes it: 7.5 and 7.50.
      const own = listed.inquiries.map((e) => moneyOf(1, { amount: e.unitPrice!, currency: e.currency! }).amount);
      expect(own.sort()).toEqual(['7.5', '7.50']);
      const expected = own.reduce((sum, amount) => sumOf(sum, amount), '0');
      expect(expected).toBe('15.00');

      const [row] = (await usage(store, MONTH.from, MONTH.to, 'month')).filter((r) => r.clientId === 'scales');
      const [trend] = (await trends(store, MONTH.from, MONTH.to, 'UTC')).rows.filter((r) => r.clientId === 'scales');
      expect({
        usage: spentAndSavedJson(row.spent, row.saved, today).spentAmount,
        trends: spentJson(trend.spent, today).spentAmount,
      }).toEqual({ usage: expected, trends: expected });
    });
  },
);
