import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis-server.js';
import { untilProcessReady } from './events.js';
import { ServerProcess, startOnFreshPorts } from './server-process.js';

/** Debian's server binaries (`postgresql` package): the newest major installed. */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root).filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
    : [];
  if (majors.length === 0)
    throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)');
  majors.sort((a, b) => Number(b) - Number(a));
  return join(root, majors[0], 'bin');
}

/**
 * PostgreSQL refuses to run as root, and the tests (and CI) do: the server runs as the
 * `postgres` system user (the Debian package creates it) in a data directory it owns.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * A real PostgreSQL server on a free loopback port, owned by one test file, like RedisServer:
 * `initdb` into a temporary directory, then `postgres` on it (fsync off: a test's data need not
 * survive a power cut, but survives the server's crash: commits stay synchronous). It can be
 * killed (SIGKILL, as a crash) and restarted with its data (crash recovery).
 */
export class PostgresServer extends ServerProcess {
  private readonly bin = binDir();
  private readonly user = serverUser();

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {
    super();
  }

  static async start(): Promise<PostgresServer> {
    const dir = mkdtempSync(join(tmpdir(), 'vgw-postgres-'));
    const server = new PostgresServer(await freePort(), dir);
    if (server.user) chownSync(dir, server.user.uid, server.user.gid);
    const init = spawnSync(
      join(server.bin, 'initdb'),
      ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      { encoding: 'utf8', ...server.user },
    );
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.slice(-500)}`);
    // On the same data, a fresh port for each try.
    return startOnFreshPorts(async (attempt) => {
      const candidate = attempt === 1 ? server : new PostgresServer(await freePort(), dir);
      await candidate.launch();
      return candidate;
    });
  }

  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  protected async launch(): Promise<void> {
    const child = spawn(
      join(this.bin, 'postgres'),
      [
        '-D',
        join(this.dir, 'data'),
        '-k',
        this.dir,
        '-p',
        String(this.port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'max_connections=200',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], ...this.user },
    );
    this.process = child;
    await untilProcessReady(child, 'stderr', 'database system is ready to accept connections', 'postgres');
  }

  /** Hard kill, as a crash would: clients see their connections drop. */
  override async kill(): Promise<void> {
    const child = await this.end('SIGKILL');
    // A SIGKILLed postmaster leaves its backends, which exit on their own once they notice;
    // they hold the inherited output pipes meanwhile, so this end is closed now. The lock
    // file names the dead pid, which the next start detects and clears.
    child?.stdout?.destroy();
    child?.stderr?.destroy();
  }

  async stop(): Promise<void> {
    await this.end('SIGQUIT');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
