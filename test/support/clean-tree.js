// The work tree must be the same after `npm test` as before it: no test may leave a file
// behind (a Redis dump.rdb, a rendered chart, a report). Jest's globalSetup takes a snapshot
// of `git status --porcelain --ignored` once before any project starts, and globalTeardown
// compares after every worker has finished, so parallel projects cannot race the check.
// Ignored files count too (dump.rdb is ignored, yet a test writing it is still a leak);
// only the build and cache folders the tooling owns are left out.
import { execFileSync } from 'node:child_process';

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
