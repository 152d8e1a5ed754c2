import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { nextEvent } from './events.js';
import { freePort } from './redis-server.js';
import { TEST_API_KEYS } from './gateway.js';
import { UPSTREAM_PASSWORD, UPSTREAM_USERNAME } from './fixtures.js';

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * The gateway compiled as production runs it (`tsconfig.build.json`, `node main.js`), into a
 * folder of its own under `.build/` (so node_modules and package.json resolve from the
 * repository, and no other test's build is touched). Returns the folder; remove it when done.
 */
export function buildGateway(): string {
  mkdirSync(join(ROOT, '.build'), { recursive: true });
  const outDir = mkdtempSync(join(ROOT, '.build', 'gateway-process-'));
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc: ${tsc.stdout}${tsc.stderr}`);
  return outDir;
}

export function removeBuild(outDir: string): void {
  rmSync(outDir, { recursive: true, force: true });
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
    await nextEvent(child.stdout, 'data', () => stdout.includes(`listening on port ${port}`), 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`gateway process did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return { url: `http://127.0.0.1:${port}`, process: child, output: () => stdout, exited };
}
