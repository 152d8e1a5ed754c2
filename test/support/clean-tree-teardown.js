import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChanges, treeState } from './clean-tree.js';

/**
 * Jest globalTeardown: fails the run when a test changed the work tree (see clean-tree.js).
 * The same check edits made by hand during a run would trip; rerun after editing.
 */
export default async function cleanTreeTeardown() {
  await globalThis.__vgwRunPostgres?.stop();
  const before = globalThis.__vgwTreeBefore;
  if (!before) return;
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const after = treeState(root);
  if (!after) return;
  const changes = runChanges(before, after, globalThis.__vgwLedgersInUse ?? []);
  if (changes.length > 0) {
    throw new Error(`the tests changed the work tree (git status --porcelain --ignored):\n${changes.join('\n')}`);
  }
}
