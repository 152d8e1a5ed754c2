import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { treeState } from './clean-tree.js';

/** Jest globalSetup: remembers the work tree's state (see clean-tree.js). */
export default function cleanTreeSetup() {
  globalThis.__vgwTreeBefore = treeState(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'));
}
