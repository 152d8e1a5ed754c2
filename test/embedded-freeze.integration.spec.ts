/**
 * EmbeddedLedgerFreezer (src/ledger/embedded-freeze.ts) on the real embedded ledger (PGlite in its
 * worker): past its threshold the whole database is frozen, so the age of the oldest unfrozen
 * transaction id falls back to ~0; below it nothing is run. PostgreSQL servers have autovacuum.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { EmbeddedLedgerFreezer, type FreezableLedger } from '../src/ledger/embedded-freeze.js';
import { PgliteLedgerDatabase } from '../src/ledger/ledger-database.js';
import { migrate } from '../src/ledger/ledger-schema.js';

let db: PgliteLedgerDatabase;
let ledger: FreezableLedger;
const age = async () =>
  (
    await db.query<{ age: number }>(
      'SELECT age(datfrozenxid)::int AS age FROM pg_database WHERE datname = current_database()',
    )
  )[0].age;

beforeAll(async () => {
  db = await PgliteLedgerDatabase.open(mkdtempSync(join(tmpdir(), 'vgw-freeze-')));
  const migrated = migrate(db);
  ledger = { db, ready: () => migrated };
  await migrated;
  // Write transactions, each taking a transaction id: the age to freeze away.
  await db.query('CREATE TABLE freeze_probe (n int)');
  for (let i = 0; i < 60; i++) await db.query('INSERT INTO freeze_probe VALUES ($1)', [i]);
}, 60_000);
afterAll(async () => {
  await db.close();
  rmSync(db.dataDir, { recursive: true, force: true });
});

it('below its threshold reads the age and runs nothing else', async () => {
  const before = await age();
  expect(await new EmbeddedLedgerFreezer(ledger, before + 1_000_000).check()).toBe(false);
  expect(await age()).toBeGreaterThanOrEqual(before);
});

it('past its threshold freezes the whole database: the age falls back to about none', async () => {
  const before = await age();
  expect(before).toBeGreaterThan(50);
  expect(await new EmbeddedLedgerFreezer(ledger, 50).check()).toBe(true);
  expect(await age()).toBeLessThan(before);
  expect(await age()).toBeLessThanOrEqual(5);
});
