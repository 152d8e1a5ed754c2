import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The file beside the sandbox's ledger that keeps its throwaway key. */
export const SANDBOX_STORE_KEY_FILE = 'sandbox-store-encryption-key';

/**
 * The sandbox's key ring for encryption at rest: the ledger keeps upstream results only sealed
 * (docs/api.md §6), so without a ring of the operator's (STORE_ENCRYPTION_KEYS, or its _FILE:
 * undefined here, the gateway reads it) the sandbox makes a throwaway key. It lives as long as
 * the ledger it seals: beside LEDGER_DATA_DIR (in its parent, .data/ by default, git-ignored),
 * created with 'wx' so that two starts never write two keys; in memory with an in-memory ledger.
 * Not a production key, and never printed. `said`: for the banner.
 */
export function sandboxStoreKeys(
  env: NodeJS.ProcessEnv,
  cwd = process.cwd(),
): { keys: string; said: string } | undefined {
  if (env.STORE_ENCRYPTION_KEYS || env.STORE_ENCRYPTION_KEYS_FILE) return undefined;
  const fresh = `sandbox:${randomBytes(32).toString('base64')}`;
  // A ledger in a PostgreSQL server outlives the sandbox: its key is kept in the default place.
  const external = Boolean(env.LEDGER_DATABASE_URL || env.LEDGER_DATABASE_URL_FILE);
  const dataDir = (!external && env.LEDGER_DATA_DIR?.trim()) || '.data/ledger';
  if (dataDir === 'memory://') {
    return { keys: fresh, said: 'a throwaway key in memory, lost with the sandbox as its ledger is' };
  }
  const file = join(dirname(resolve(cwd, dataDir)), SANDBOX_STORE_KEY_FILE);
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${fresh}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const shown = relative(cwd, file);
  return {
    keys: readFileSync(file, 'utf8').trim(),
    said: `a throwaway key made for this sandbox (${shown.startsWith('..') ? file : shown})`,
  };
}
