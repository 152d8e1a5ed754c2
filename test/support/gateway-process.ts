import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { START_BOUND_MS, nextEvent } from './events.js';
import { freePort } from './redis-server.js';
import { TEST_API_KEYS } from './gateway.js';
import { UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './fixtures.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const BUILDS = join(ROOT, '.build');

/**
 * A digest of what `tsc -p tsconfig.build.json` reads: the sources under src/, the two tsconfig
 * files, package.json, and the lock file (the TypeScript version and the type packages). Equal digests give
 * the same compiled output, so a build under that name can be reused.
 */
function sourceDigest(): string {
  const hash = createHash('sha256');
  // What tsc reads or the gateway serves; not specs, nor an editor's swap and backup files.
  const sources = readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.startsWith('.') && !entry.name.endsWith('~'))
    .filter((entry) => !entry.name.endsWith('.spec.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .sort();
  for (const file of [...sources, 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json']) {
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The gateway compiled as production runs it (`tsconfig.build.json`, `node main.js`), in a
 * folder under `.build/` (so node_modules and package.json resolve from the repository). The
 * folder is named by the digest of its sources and shared: a full type-checking compile takes
 * ~10 s, and the spec files that start gateway processes would otherwise each pay it. A build is
 * compiled into a folder of its own and renamed into place, so a folder under the final name is
 * complete; two workers compiling at once both succeed, the second discarding its copy. Nothing
 * is removed during a run (a spec file may hold a build while another compiles one of changed
 * sources): the run's global setup clears the builds of earlier runs. Treat the folder as read-only.
 */
export function buildGateway(): string {
  const outDir = join(BUILDS, `gateway-${sourceDigest()}`);
  if (existsSync(outDir)) return outDir;
  mkdirSync(BUILDS, { recursive: true });
  const scratch = mkdtempSync(join(BUILDS, 'gateway-process-'));
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', scratch],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (tsc.status !== 0) {
    rmSync(scratch, { recursive: true, force: true });
    throw new Error(`tsc: ${tsc.stdout}${tsc.stderr}`);
  }
  // mkdtemp's 0700, opened as tsc leaves its own folders: another user may run it (the image test).
  chmodSync(scratch, 0o755);
  try {
    renameSync(scratch, outDir);
  } catch {
    // Another worker renamed its build into place first: use that one.
    rmSync(scratch, { recursive: true, force: true });
  }
  return outDir;
}

/** A gateway replica in a process of its own: it can be sent SIGTERM, or SIGKILLed mid-call. */
export interface GatewayProcess {
  url: string;
  process: ChildProcess;
  /** Everything it wrote to stdout (JSON log lines). */
  output(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

/** Starts `node <outDir>/main.js` on a free loopback port and resolves once it listens. */
export async function startGatewayProcess(outDir: string, env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(outDir, 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      UPSTREAM_USERNAME,
      UPSTREAM_PASSWORD,
      API_KEYS: TEST_API_KEYS,
      LOG_LEVEL: 'info',
      // The run's PostgreSQL for the ledger (ledger-postgres.js), not an embedded PGlite per
      // process; without it, PGlite in memory: never a directory in the repository.
      ...(process.env.VGW_TEST_LEDGER_DATABASE_URL
        ? { LEDGER_DATABASE_URL: process.env.VGW_TEST_LEDGER_DATABASE_URL }
        : {}),
      LEDGER_DATA_DIR: 'memory://',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await nextEvent(child.stdout, 'data', () => stdout.includes(`listening on port ${port}`), START_BOUND_MS);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`gateway process did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return { url: `http://127.0.0.1:${port}`, process: child, output: () => stdout, exited };
}

/** Resolves once the gateway has opened and migrated its embedded ledger (PGlite in LEDGER_DATA_DIR). */
export async function untilEmbeddedLedgerOpen(gateway: GatewayProcess): Promise<void> {
  const opened = () => gateway.output().includes('embedded ledger open and migrated');
  if (!opened()) await nextEvent(gateway.process.stdout!, 'data', opened, START_BOUND_MS);
}

/**
 * The gateway processes of one spec file, all from one build (compiled at the first start, not
 * at import), so that its afterAll ends every one a test left running.
 */
export class GatewayProcesses {
  private build: string | undefined;
  private readonly started: GatewayProcess[] = [];

  async start(env: Record<string, string>): Promise<GatewayProcess> {
    this.build ??= buildGateway();
    const started = await startGatewayProcess(this.build, env);
    this.started.push(started);
    return started;
  }

  /** SIGKILLs those still running and waits for every one to exit. */
  async killAll(): Promise<void> {
    for (const p of this.started) if (p.process.exitCode === null) p.process.kill('SIGKILL');
    await Promise.all(this.started.map((p) => p.exited));
  }
}
