import { existsSync, readdirSync, rmSync } from 'node:fs';
import process from 'node:process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ledgersInUse, treeState } from './clean-tree.js';
import { startRunPostgres } from './ledger-postgres.js';

/**
 * Jest globalSetup: remembers the work tree's state (see clean-tree.js), and starts the run's
 * PostgreSQL for the gateways' ledger (ledger-postgres.js; the workers inherit its URL).
 */
export default async function cleanTreeSetup() {
  // Compiled gateways of earlier runs (gateway-process.ts, buildGateway): cleared before any worker
  // starts, never during the run, where a spec file may still hold one.
  const builds = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '.build');
  if (existsSync(builds)) {
    for (const name of readdirSync(builds).filter((entry) => /^gateway-/.test(entry))) {
      rmSync(resolve(builds, name), { recursive: true, force: true });
    }
  }
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const before = treeState(root);
  globalThis.__vgwTreeBefore = before;
  // A sandbox running beside the run: its ledger is its own, even if it stops before the end.
  globalThis.__vgwLedgersInUse = before ? await ledgersInUse(root, before) : [];
  const postgres = await startRunPostgres();
  if (postgres) {
    globalThis.__vgwRunPostgres = postgres;
    process.env.VGW_TEST_LEDGER_DATABASE_URL = postgres.url;
  }
}
