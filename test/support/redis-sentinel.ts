import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer, freePort } from './redis-server.js';

/**
 * A real Redis master watched by one Sentinel (quorum 1) on free loopback ports, for the
 * REDIS_SENTINELS / REDIS_SENTINEL_NAME mode.
 */
export class RedisSentinel {
  private constructor(
    readonly master: RedisServer,
    readonly port: number,
    readonly name: string,
    private readonly process: ChildProcess,
    private readonly dir: string,
  ) {}

  /**
   * `auth`: the master requires `masterPassword` (for the ACL user `masterUser`, or the
   * default user), and the Sentinel itself requires `sentinelPassword`.
   */
  static async start(
    name = 'vgw-master',
    auth?: { masterUser?: string; masterPassword: string; sentinelPassword: string },
  ): Promise<RedisSentinel> {
    const masterArgs = !auth
      ? []
      : auth.masterUser
        ? ['--user', auth.masterUser, 'on', `>${auth.masterPassword}`, '~*', '&*', '+@all', '--user', 'default', 'off']
        : ['--requirepass', auth.masterPassword];
    const master = await RedisServer.start({ args: masterArgs });
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'vgw-sentinel-'));
    const config = join(dir, 'sentinel.conf');
    // Sentinel rewrites its configuration file, so it lives in a folder of its own.
    writeFileSync(
      config,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} 5000`,
        ...(auth
          ? [
              ...(auth.masterUser ? [`sentinel auth-user ${name} ${auth.masterUser}`] : []),
              `sentinel auth-pass ${name} ${auth.masterPassword}`,
              `requirepass ${auth.sentinelPassword}`,
            ]
          : []),
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [config, '--sentinel'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        // "+monitor master <name> …": the Sentinel knows the master and can answer for it.
        if (output.includes(`+monitor master ${name}`)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis sentinel exited with ${code}: ${output.slice(-300)}`)));
    });
    child.stdout?.resume();
    return new RedisSentinel(master, port, name, child, dir);
  }

  get sentinels(): string {
    return `127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    const exited = once(this.process, 'exit');
    this.process.kill('SIGKILL');
    await exited;
    await this.master.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
