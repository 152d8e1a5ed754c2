import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter, once } from 'node:events';
import { Redis } from 'ioredis';
import { RedisServer, freePort } from './redis-server.js';
import { START_BOUND_MS, nextEvent } from './events.js';

/** Waits until the replica has finished its first sync with the master. */
async function untilInSync(replica: RedisServer): Promise<void> {
  const client = new Redis(replica.url);
  try {
    // A bound, not a budget: on a loaded machine (parallel test projects on two cores) the first
    // full sync took longer than the 5 s this loop used to allow (events.ts, START_BOUND_MS).
    const deadline = Date.now() + START_BOUND_MS;
    while (Date.now() < deadline) {
      if ((await client.info('replication')).includes('master_link_status:up')) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`replica never synced with its master within ${START_BOUND_MS} ms`);
  } finally {
    client.disconnect();
  }
}

export interface SentinelOptions {
  /** Also a replica of the master, in sync before the Sentinel starts (so it knows it at once). */
  replica?: boolean;
  /** `down-after-milliseconds`: how soon a silent master counts as down (default 5000). */
  downAfterMs?: number;
}

/**
 * A real Redis master watched by one Sentinel (quorum 1) on free loopback ports, for the
 * REDIS_SENTINELS / REDIS_SENTINEL_NAME mode; optionally with a replica it can promote.
 */
export class RedisSentinel {
  private output = '';
  private readonly events = new EventEmitter();

  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer | null,
    readonly port: number,
    readonly name: string,
    private readonly process: ChildProcess,
    private readonly dir: string,
  ) {
    process.stdout?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      if (this.output.includes(`+switch-master ${name}`)) this.events.emit('switched');
    });
  }

  /** Resolves when the Sentinel has promoted a replica (`+switch-master`). */
  untilSwitchMaster(timeoutMs = 20_000): Promise<void> {
    if (this.output.includes(`+switch-master ${this.name}`)) return Promise.resolve();
    return nextEvent<void>(this.events, 'switched', () => true, timeoutMs);
  }

  /**
   * `auth`: the master requires `masterPassword` (for the ACL user `masterUser`, or the
   * default user), and the Sentinel itself requires `sentinelPassword`.
   */
  static async start(
    name = 'vgw-master',
    auth?: { masterUser?: string; masterPassword: string; sentinelPassword: string },
    options: SentinelOptions = {},
  ): Promise<RedisSentinel> {
    const masterArgs = !auth
      ? []
      : auth.masterUser
        ? ['--user', auth.masterUser, 'on', `>${auth.masterPassword}`, '~*', '&*', '+@all', '--user', 'default', 'off']
        : ['--requirepass', auth.masterPassword];
    const master = await RedisServer.start({ args: masterArgs });
    const replica = options.replica
      ? await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(master.port)] })
      : null;
    if (replica) {
      // A failed start must not leave its redis-servers running (Jest would never exit).
      await untilInSync(replica).catch(async (error: unknown) => {
        await Promise.all([master.stop(), replica.stop()]);
        throw error;
      });
    }
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
        `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 5000}`,
        `sentinel failover-timeout ${name} 10000`,
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
    const sentinel = new RedisSentinel(master, replica, port, name, child, dir);
    sentinel.output = output;
    return sentinel;
  }

  get sentinels(): string {
    return `127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    const exited = once(this.process, 'exit');
    this.process.kill('SIGKILL');
    await exited;
    await this.master.stop();
    await this.replica?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
