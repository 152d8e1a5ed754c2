import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { redisTlsArgs, type TestCertificates } from './tls-certificates.js';
import { untilProcessReady } from './events.js';
import { ServerProcess, startOnFreshPorts } from './server-process.js';

/** A free loopback TCP port, as the OS hands it out. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export interface RedisServerOptions {
  /** More redis-server arguments, e.g. `['--requirepass', pw]` or `['--user', 'app', 'on', '>pw', '~*', '&*', '+@all']`. */
  args?: string[];
  /** Serve TLS only (no plain port), client certificates required. */
  tls?: TestCertificates;
}

/**
 * A real `redis-server` on a free loopback port, owned by one test file: it can be killed
 * and restarted on the same port to test outages (restarted empty, as a Redis without
 * persistence). Nothing is persisted on purpose, yet a
 * replica's full sync writes the master's RDB to disk whatever `--save` says: every server
 * has a temporary `--dir` of its own (removed on stop), so no test writes into the work tree.
 */
export class RedisServer extends ServerProcess {
  private readonly dir = mkdtempSync(join(tmpdir(), 'vgw-redis-'));

  private constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {
    super();
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    return startOnFreshPorts(async () => {
      const server = new RedisServer(await freePort(), options);
      try {
        await server.launch();
      } catch (error) {
        rmSync(server.dir, { recursive: true, force: true });
        throw error;
      }
      return server;
    });
  }

  /** `redis://` (or `rediss://` with TLS) to 127.0.0.1, without credentials. */
  get url(): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`;
  }

  protected async launch(): Promise<void> {
    const child = spawn(
      'redis-server',
      [
        ...(this.options.tls ? redisTlsArgs(this.options.tls, this.port) : ['--port', String(this.port)]),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
        '--daemonize',
        'no',
        '--loglevel',
        'notice',
        ...(this.options.args ?? []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    await untilProcessReady(child, 'stdout', 'Ready to accept connections', 'redis-server');
  }

  /** Sends a signal to the server: SIGSTOP freezes it with every connection open, SIGCONT resumes. */
  signal(name: 'SIGSTOP' | 'SIGCONT'): void {
    this.process?.kill(name);
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
