import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgLedgerDatabase, PgliteLedgerDatabase, type LedgerDatabase } from '../../src/ledger/ledger-database.js';

/**
 * The ledger's two engines, for `describe.each`: the PostgreSQL server at `url()` (read when a
 * block opens it, so after the file's beforeAll has started the server), and PGlite as the
 * gateway runs it: in its worker thread, on disk, in a directory of its own (`vgw-<name>-…`).
 */
export function ledgerEngines(url: () => string, name: string): Array<[string, () => Promise<LedgerDatabase>]> {
  return [
    ['PostgreSQL server', () => Promise.resolve(new PgLedgerDatabase(url()))],
    ['PGlite', () => PgliteLedgerDatabase.open(mkdtempSync(join(tmpdir(), `vgw-${name}-`)))],
  ];
}

/** Closes a database of `ledgerEngines`, and removes PGlite's directory. */
export async function closeLedger(db: LedgerDatabase): Promise<void> {
  await db.close();
  if (db instanceof PgliteLedgerDatabase) rmSync(db.dataDir, { recursive: true, force: true });
}
