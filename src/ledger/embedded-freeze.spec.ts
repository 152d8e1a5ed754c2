import { afterEach, expect, it } from '@jest/globals';
import { EmbeddedLedgerFreezer, type FreezableLedger } from './embedded-freeze.js';

/** A ledger whose age is `age` and whose VACUUM never ends (a long freeze under way). */
function ledgerAged(age: number) {
  const statements: string[] = [];
  const ledger: FreezableLedger = {
    ready: () => Promise.resolve(),
    db: {
      query: <R>(sql: string): Promise<R[]> => {
        statements.push(sql);
        return sql.startsWith('VACUUM') ? new Promise<R[]>(() => {}) : Promise.resolve([{ age }] as R[]);
      },
    },
  };
  return { ledger, statements };
}

let freezer: EmbeddedLedgerFreezer | undefined;
afterEach(() => {
  void freezer?.onModuleDestroy();
});

it('checks once at start, not only an hour later (a replica restarted hourly would never check)', async () => {
  const { ledger, statements } = ledgerAged(10);
  freezer = new EmbeddedLedgerFreezer(ledger, 100);
  freezer.onModuleInit();
  await new Promise(setImmediate);
  expect(statements).toEqual([expect.stringContaining('age(datfrozenxid)')]);
});

it('does not hold the shutdown while a freeze runs (Nest destroys modules before the shutdown sequence)', async () => {
  const { ledger, statements } = ledgerAged(1_000);
  freezer = new EmbeddedLedgerFreezer(ledger, 100);
  const freezing = freezer.check();
  await new Promise(setImmediate);
  expect(statements).toContain('VACUUM (FREEZE)');
  let destroyed = false;
  void Promise.resolve(freezer.onModuleDestroy()).then(() => (destroyed = true));
  await new Promise(setImmediate);
  expect(destroyed).toBe(true);
  void freezing;
});
