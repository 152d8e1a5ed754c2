/**
 * Release discipline, checked in `npm test` (docs/releasing.md):
 * - the app (package.json) and the chart (Chart.yaml) carry semantic versions, and the
 *   chart's appVersion is the app's version;
 * - chart-testing's version-increment rule, on this repository's history: no file of the
 *   chart may change after the commit that last set the chart's version (so a chart change
 *   without a bump fails CI, which runs on a normal clone of main). A shallow clone whose
 *   history stops before that commit cannot tell: the check says so and passes.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { itWith } from './support/tools.js';

const ROOT = new URL('..', import.meta.url).pathname;
const CHART = 'helm/verification-gateway';
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

/** semver's precedence of two release versions (pre-release tags compared as strings). */
function compareVersions(a: string, b: string): number {
  const parts = (v: string) => v.split(/[-+]/)[0].split('.').map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  const [pa, pb] = [a.split('+')[0].split('-')[1], b.split('+')[0].split('-')[1]];
  if (pa === pb) return 0;
  if (pa === undefined) return 1;
  if (pb === undefined) return -1;
  return pa < pb ? -1 : 1;
}

/**
 * chart-testing's version-increment rule on a repository's history: the chart files changed
 * since the newest commit that changed the chart's version (work tree included), or why the
 * history cannot tell. A version that went down counts as not set.
 */
export function chartChangesSinceVersionSet(
  repo: string,
  chart = CHART,
): { files: string[]; versionSetIn?: string; reason?: string } {
  const git = (...args: string[]): string =>
    execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const versionAt = (commit?: string): string | undefined => {
    try {
      const text = commit
        ? git('show', `${commit}:${chart}/Chart.yaml`)
        : readFileSync(join(repo, chart, 'Chart.yaml'), 'utf8');
      return String((parse(text) as { version?: unknown }).version);
    } catch {
      return undefined;
    }
  };
  let commits: string[];
  try {
    commits = git('log', '--format=%H', '--', `${chart}/Chart.yaml`).split('\n').filter(Boolean);
  } catch {
    return { files: [], reason: 'not a git work tree' };
  }
  const current = versionAt();
  const committed = commits.length > 0 ? versionAt(commits[0]) : undefined;
  if (current && committed && compareVersions(current, committed) > 0) return { files: [] }; // bumped, not yet committed
  for (const commit of commits) {
    const parent = git('rev-list', '--max-count=1', '--skip=1', commit) || undefined;
    if (!parent && git('rev-parse', '--is-shallow-repository') === 'true') {
      return { files: [], reason: `shallow clone: history ends before ${chart}/Chart.yaml last changed its version` };
    }
    const before = parent ? versionAt(parent) : undefined;
    const after = versionAt(commit);
    if (before !== undefined && (after === undefined || compareVersions(after, before) <= 0)) continue;
    const files = git('diff', '--name-only', commit, '--', chart).split('\n').filter(Boolean);
    return { files, versionSetIn: commit };
  }
  return { files: [], reason: 'no commit sets the chart version' };
}

describe('release discipline', () => {
  it('gives the app and the chart semantic versions; the chart’s appVersion is the app’s', () => {
    const app = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;
    const chart = parse(readFileSync(`${ROOT}${CHART}/Chart.yaml`, 'utf8')) as { version: string; appVersion: string };
    expect(app).toMatch(SEMVER);
    expect(chart.version).toMatch(SEMVER);
    expect(chart.appVersion).toBe(app);
  });

  // A shallow clone has no history to check: the test is then reported as skipped, with why.
  const history = chartChangesSinceVersionSet(ROOT);
  if (history.reason) console.warn(`chart version check skipped: ${history.reason}`);
  itWith(history.reason ? null : history)(
    'bumps the chart version with every change to the chart (chart-testing’s version-increment rule)',
    ({ files, versionSetIn }) => {
      expect({ versionSetIn, changedSinceWithoutBump: files }).toEqual({ versionSetIn, changedSinceWithoutBump: [] });
    },
  );

  describe('the version-increment rule, on a repository made here', () => {
    let repo: string;
    const sh = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
    const commit = (message: string) =>
      sh('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-qam', message);
    const write = (file: string, text: string) => writeFileSync(join(repo, CHART, file), text);

    beforeEach(() => {
      repo = mkdtempSync(join(tmpdir(), 'vgw-release-'));
      mkdirSync(join(repo, CHART, 'templates'), { recursive: true });
      sh('init', '-q');
      write('Chart.yaml', 'apiVersion: v2\nname: c\nversion: 0.1.0\n');
      write('templates/a.yaml', 'a: 1\n');
      writeFileSync(join(repo, 'README.md'), 'x\n');
      sh('add', '.');
      commit('chart 0.1.0');
    });
    afterEach(() => rmSync(repo, { recursive: true, force: true }));

    it('fails a chart change without a bump, not a change outside the chart', () => {
      writeFileSync(join(repo, 'README.md'), 'y\n');
      commit('docs');
      expect(chartChangesSinceVersionSet(repo).files).toEqual([]);
      write('templates/a.yaml', 'a: 2\n');
      commit('template change');
      expect(chartChangesSinceVersionSet(repo).files).toEqual([`${CHART}/templates/a.yaml`]);
      // Uncommitted changes count too.
      write('templates/a.yaml', 'a: 3\n');
      expect(chartChangesSinceVersionSet(repo).files).toEqual([`${CHART}/templates/a.yaml`]);
    });

    it('passes once the version goes up, and not when it goes down', () => {
      write('templates/a.yaml', 'a: 2\n');
      write('Chart.yaml', 'apiVersion: v2\nname: c\nversion: 0.2.0\n');
      commit('chart 0.2.0');
      expect(chartChangesSinceVersionSet(repo).files).toEqual([]);
      write('templates/a.yaml', 'a: 3\n');
      write('Chart.yaml', 'apiVersion: v2\nname: c\nversion: 0.1.9\n');
      commit('down');
      expect(chartChangesSinceVersionSet(repo).files).toEqual([`${CHART}/Chart.yaml`, `${CHART}/templates/a.yaml`]);
    });

    it('says why it cannot tell in a shallow clone', () => {
      write('templates/a.yaml', 'a: 2\n');
      commit('template change');
      const clone = mkdtempSync(join(tmpdir(), 'vgw-release-clone-'));
      try {
        execFileSync('git', ['clone', '-q', '--depth', '1', `file://${repo}`, clone], { stdio: 'ignore' });
        expect(chartChangesSinceVersionSet(clone).reason).toMatch(/^shallow clone/);
      } finally {
        rmSync(clone, { recursive: true, force: true });
      }
    });
  });

  it('keeps a changelog with an Unreleased section (Keep a Changelog)', () => {
    const changelog = readFileSync(`${ROOT}CHANGELOG.md`, 'utf8');
    expect(changelog).toMatch(/^## \[Unreleased\]$/m);
  });
});
