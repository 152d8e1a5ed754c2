/**
 * The guard that keeps `npm test` from changing the work tree (test/support/clean-tree.js,
 * run as Jest's globalSetup/globalTeardown around the whole run), against a real git
 * repository made here: it must see a leaked file even where .gitignore hides it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { treeChanges, treeState } from './support/clean-tree.js';

describe('clean-tree guard', () => {
  let repo: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });

  beforeEach(() => {
    repo = mkdtempSync(join(tmpdir(), 'vgw-clean-tree-'));
    git('init', '-q');
    writeFileSync(join(repo, '.gitignore'), '*.rdb\nnode_modules/\n');
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

  it('has nothing to compare outside a git work tree', () => {
    const plain = mkdtempSync(join(tmpdir(), 'vgw-no-git-'));
    try {
      expect(treeState(plain)).toBeNull();
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });
});
