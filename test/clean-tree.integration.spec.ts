/**
 * The guard that keeps `npm test` from changing the work tree (test/support/clean-tree.js,
 * run as Jest's globalSetup/globalTeardown around the whole run), against a real git
 * repository made here: it must see a leaked file even where .gitignore hides it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { ledgersInUse, runChanges, treeChanges, treeState } from './support/clean-tree.js';

describe('clean-tree guard', () => {
  let repo: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });

  beforeEach(() => {
    repo = mkdtempSync(join(tmpdir(), 'vgw-clean-tree-'));
    git('init', '-q');
    writeFileSync(join(repo, '.gitignore'), '*.rdb\nnode_modules/\n.data/\n');
    writeFileSync(join(repo, 'tracked.txt'), 'one\n');
    git('add', '.');
    git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qm', 'init');
  });
  afterEach(() => rmSync(repo, { recursive: true, force: true }));

  it('reports an ignored dump.rdb, a new file and a changed tracked file', () => {
    const before = treeState(repo)!;
    expect(before).toEqual([]);
    writeFileSync(join(repo, 'dump.rdb'), 'REDIS0011');
    writeFileSync(join(repo, 'report.json'), '{}');
    writeFileSync(join(repo, 'tracked.txt'), 'two\n');
    expect(treeChanges(before, treeState(repo)!)).toEqual(['+  M tracked.txt', '+ !! dump.rdb', '+ ?? report.json']);
  });

  it('leaves the tooling folders (node_modules, dist, .build, coverage) alone', () => {
    const before = treeState(repo)!;
    mkdirSync(join(repo, 'node_modules', '.cache'), { recursive: true });
    writeFileSync(join(repo, 'node_modules', '.cache', 'x'), '');
    expect(treeChanges(before, treeState(repo)!)).toEqual([]);
  });

  it('reports a file that disappeared', () => {
    writeFileSync(join(repo, 'notes.rdb'), '');
    const before = treeState(repo)!;
    rmSync(join(repo, 'notes.rdb'));
    expect(treeChanges(before, treeState(repo)!)).toEqual(['- !! notes.rdb']);
  });

  /** A gateway holding the embedded ledger `dir` (its data-dir lock listening), with a file in it. */
  async function liveLedger(dir: string): Promise<Server> {
    mkdirSync(join(repo, dir, 'pglite'), { recursive: true });
    writeFileSync(join(repo, dir, 'pglite', 'PG_VERSION'), '17');
    const lock = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => lock.listen(join(repo, dir, 'gateway.lock'), resolve));
    return lock;
  }

  it("leaves out the ledger of a gateway running when the run began, not one a test's gateway still holds", async () => {
    const sandbox = await liveLedger('.data/ledger');
    let leftover: Server | undefined;
    try {
      const before = treeState(repo)!;
      const atStart = await ledgersInUse(repo, before);
      expect(atStart).toEqual(['.data/ledger/', '.data/sandbox-store-encryption-key']);
      // The sandbox writes on; a test starts a gateway on a ledger in the tree and leaves it running.
      writeFileSync(join(repo, '.data/ledger/pglite/16483_fsm'), '');
      leftover = await liveLedger('.data/test-ledger');
      expect(runChanges(before, treeState(repo)!, atStart)).toEqual(['+ !! .data/test-ledger/pglite/PG_VERSION']);
    } finally {
      sandbox.close();
      leftover?.close();
    }
  });

  it('has nothing to compare outside a git work tree', () => {
    const plain = mkdtempSync(join(tmpdir(), 'vgw-no-git-'));
    try {
      expect(treeState(plain)).toBeNull();
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });
});
