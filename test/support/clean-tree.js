// The work tree must be the same after `npm test` as before it: no test may leave a file
// behind (a Redis dump.rdb, a rendered chart, a report). Jest's globalSetup takes a snapshot
// of `git status --porcelain --ignored` once before any project starts, and globalTeardown
// compares after every worker has finished, so parallel projects cannot race the check.
// Ignored files count too (dump.rdb is ignored, yet a test writing it is still a leak);
// only the build and cache folders the tooling owns are left out, and the embedded ledger of a
// gateway running beside the tests (`npm run sandbox` in another terminal keeps .data/ledger):
// a directory whose lock answers (src/ledger/data-dir-lock.ts) is that process's, not a test's.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';

/** Folders that builds and caches write by design (all in .gitignore). */
export const OWNED_BY_TOOLING = ['node_modules/', 'dist/', '.build/', 'coverage/'];

/**
 * The tree's state as a sorted list of porcelain lines, or null when `dir` is not a git
 * work tree (an exported source tarball): there is nothing to compare then.
 */
export function treeState(dir) {
  let out;
  try {
    out = execFileSync('git', ['status', '--porcelain=v1', '--ignored', '--untracked-files=all', '-z'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 << 20,
    });
  } catch {
    return null;
  }
  return out
    .split('\0')
    .filter((line) => line.length > 3)
    .filter((line) => !OWNED_BY_TOOLING.some((prefix) => line.slice(3).startsWith(prefix)))
    .sort();
}

/** Lines that appeared or disappeared between two states, each marked + or -. */
export function treeChanges(before, after) {
  const was = new Set(before);
  const is = new Set(after);
  return [
    ...after.filter((line) => !was.has(line)).map((line) => `+ ${line}`),
    ...before.filter((line) => !is.has(line)).map((line) => `- ${line}`),
  ];
}

/** The lock file a running gateway listens on inside its LEDGER_DATA_DIR (src/ledger/data-dir-lock.ts). */
const LEDGER_LOCK = 'gateway.lock';
/** The sandbox's throwaway key, kept beside its ledger (test/sandbox/sandbox-store-key.ts). */
const SANDBOX_KEY = 'sandbox-store-encryption-key';

/** Whether a process listens on the unix socket `path` (a live gateway holds that ledger). */
function answers(path) {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * The ignored directories of `states` (tree-relative, each ending in /) that hold the embedded
 * ledger of a gateway alive now (its lock answers): at globalSetup, a sandbox or a local start
 * beside the run, each with the sandbox's key beside it.
 */
export async function ledgersInUse(dir, ...states) {
  const candidates = new Set();
  for (const line of states.flat()) {
    if (!line.startsWith('!! ')) continue;
    for (let parent = dirname(line.slice(3)); parent !== '.' && parent !== '/'; parent = dirname(parent)) {
      if (candidates.has(parent)) break;
      candidates.add(parent);
    }
  }
  const held = [];
  for (const candidate of candidates) {
    const lock = join(dir, candidate, LEDGER_LOCK);
    if (existsSync(lock) && (await answers(lock))) held.push(`${candidate}/`, join(dirname(candidate), SANDBOX_KEY));
  }
  return held;
}

/** `state` without the ignored files under or at `ledgers` (from ledgersInUse): only ignored ones, never a tracked change. */
export function withoutLedgers(state, ledgers) {
  return state.filter(
    (line) => !(line.startsWith('!! ') && ledgers.some((prefix) => line.slice(3).startsWith(prefix))),
  );
}

/**
 * What the run changed between `before` and `after`, leaving out only the ledgers of gateways
 * that were running when it began (`ledgersAtStart`, from ledgersInUse at globalSetup). A ledger
 * whose lock answers only at the end is a test's gateway left running, a leak to report
 * (test/clean-tree.integration.spec.ts); a sandbox started during the run is restarted after it.
 */
export function runChanges(before, after, ledgersAtStart) {
  return treeChanges(withoutLedgers(before, ledgersAtStart), withoutLedgers(after, ledgersAtStart));
}
