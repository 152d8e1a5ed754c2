/**
 * Temporary LEDGER_DATA_DIRs for gateways with the embedded ledger (the default of a single-node
 * install): a fresh directory per gateway start, so that no run measures an earlier run's ledger,
 * all removed when the bench ends (also on an emergency exit, from the process's `exit` event).
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();
let exitHookInstalled = false;

/** A new empty directory under the OS's temporary directory (short: the ledger's lock is a unix socket in it). */
export async function freshLedgerDataDir(): Promise<string> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = await mkdtemp(join(tmpdir(), 'vgw-bench-ledger-'));
  made.add(dir);
  return dir;
}

/** Removes every directory made here (call once the gateways using them have stopped). */
export async function removeLedgerDataDirs(): Promise<void> {
  await Promise.all([...made].map((dir) => rm(dir, { recursive: true, force: true })));
  made.clear();
}

/** Bytes of the regular files under `dir` (its size on disk as `du --apparent-size` counts it). */
export async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}
