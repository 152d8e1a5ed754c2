import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './redis-server.js';
import { startOnFreshPorts } from './server-process.js';
import { redisCliTlsArgs, redisTlsArgs, type TestCertificates } from './tls-certificates.js';

const run = promisify(execFile);

/**
 * A real three-master Redis Cluster on free loopback ports (no replicas unless asked, nothing
 * persisted beyond a temporary folder), for proving that keys and Lua scripts are Cluster-safe;
 * with a replica per master, a master can be SIGKILLed and its replica promoted (`failOver`).
 */
export class RedisCluster {
  private constructor(
    readonly ports: number[],
    private readonly processes: ChildProcess[],
    private readonly dir: string,
  ) {}

  /** `secure`: every node requires `password` and speaks TLS only (client bus included). */
  static async start(
    size = 3,
    secure?: { password: string; tls: TestCertificates },
    /** Replicas per master (the nodes are then size × (1 + replicas)). */
    replicas = 0,
  ): Promise<RedisCluster> {
    const cli = secure ? ['-a', secure.password, '--no-auth-warning', ...redisCliTlsArgs(secure.tls)] : [];
    const dir = mkdtempSync(join(tmpdir(), 'vgw-cluster-'));
    // Fresh ports for each try (a node whose port was taken exits with 1); the error carries its last lines.
    const { ports, processes } = await startOnFreshPorts(() =>
      RedisCluster.startNodes(size * (1 + replicas), dir, secure, replicas > 0),
    );
    const cluster = new RedisCluster(ports, processes, dir);
    // A cluster that does not form stops its nodes: the caller gets the error, not running servers.
    try {
      await run('redis-cli', [
        ...cli,
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      // Slots are assigned; wait until every node agrees the cluster is up.
      for (const port of ports) {
        for (let attempt = 0; ; attempt++) {
          const { stdout } = await run('redis-cli', [...cli, '-p', String(port), 'cluster', 'info']);
          if (stdout.includes('cluster_state:ok')) break;
          if (attempt > 200) throw new Error('cluster did not become ready');
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `size` nodes on fresh ports: each node's client port and bus port its own (`--cluster-port`;
   * the default, port + 10 000, can be taken or past 65 535). Any node failing stops them all. */
  private static async startNodes(
    size: number,
    dir: string,
    secure?: { password: string; tls: TestCertificates },
    /** A master is taken for failed after 2 s, not 15 s: a failover within a short run. */
    quickFailover = false,
  ): Promise<{ ports: number[]; processes: ChildProcess[] }> {
    const taken = new Set<number>();
    const fresh = async () => {
      for (;;) {
        const port = await freePort();
        if (!taken.has(port)) return (taken.add(port), port);
      }
    };
    const ports: number[] = [];
    const busPorts: number[] = [];
    for (let i = 0; i < size; i++) {
      ports.push(await fresh());
      busPorts.push(await fresh());
    }
    const children: ChildProcess[] = [];
    const ready = ports.map(async (port, i) => {
      const child = spawn(
        'redis-server',
        [
          ...(secure
            ? [
                ...redisTlsArgs(secure.tls, port),
                '--tls-cluster',
                'yes',
                '--requirepass',
                secure.password,
                '--masterauth',
                secure.password,
              ]
            : ['--port', String(port)]),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(busPorts[i]),
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          ...(quickFailover ? ['--cluster-node-timeout', '2000'] : []),
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      children.push(child);
      let output = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('Ready to accept connections')) resolve();
        });
        child.once('exit', (code) =>
          reject(
            new Error(
              `redis-server (cluster node) exited with ${code}: ${output.trim().split('\n').slice(-3).join(' | ')}`,
            ),
          ),
        );
      });
      child.stdout?.resume();
      return child;
    });
    try {
      return { ports, processes: await Promise.all(ready) };
    } catch (error) {
      await Promise.allSettled(ready);
      await Promise.all(
        children
          .filter((child) => child.exitCode === null && child.signalCode === null)
          .map(async (child) => {
            const exited = once(child, 'exit');
            child.kill('SIGKILL');
            await exited;
          }),
      );
      throw error;
    }
  }

  /** `host:port,host:port` for REDIS_CLUSTER_NODES. */
  get nodes(): string {
    return this.ports.map((p) => `127.0.0.1:${p}`).join(',');
  }

  /**
   * SIGKILLs the master serving `key`'s slot, as a crash would, and resolves once its replica
   * is promoted and the cluster is ok again (bounded by `boundMs`); the killed node's port.
   */
  async failOver(key: string, boundMs = 20_000): Promise<number> {
    const cli = (port: number, ...args: string[]) => run('redis-cli', ['-p', String(port), ...args]);
    const live = this.ports.filter(
      (_, i) => this.processes[i].exitCode === null && this.processes[i].signalCode === null,
    );
    const slot = Number((await cli(live[0], 'cluster', 'keyslot', key)).stdout.trim());
    /** The port of the master serving `slot` as node `port` sees it (a master flagged failed is none). */
    const masterOf = async (asSeenBy: number): Promise<number | undefined> => {
      const nodes = (await cli(asSeenBy, 'cluster', 'nodes')).stdout.trim().split('\n');
      const master = nodes
        .map((line) => line.split(' '))
        .find(
          (f) =>
            f[2].includes('master') &&
            !f[2].includes('fail') &&
            f.slice(8).some((range) => {
              const [from, to = from] = range.split('-').map(Number);
              return slot >= from && slot <= to;
            }),
        );
      return master ? Number(/:(\d+)@/.exec(master[1])?.[1]) : undefined;
    };
    const port = await masterOf(live[0]);
    if (port === undefined) throw new Error(`no master serves slot ${slot}`);
    const child = this.processes[this.ports.indexOf(port)];
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    // Promoted: every survivor names another master for the slot, and the cluster is ok again.
    const until = Date.now() + boundMs;
    for (const survivor of live.filter((p) => p !== port)) {
      for (;;) {
        const info = (await cli(survivor, 'cluster', 'info')).stdout;
        const now = await masterOf(survivor);
        if (info.includes('cluster_state:ok') && now !== undefined && now !== port) break;
        if (Date.now() > until) throw new Error(`no replica promoted ${boundMs} ms after the master on ${port} died`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    return port;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.processes
        .filter((child) => child.exitCode === null && child.signalCode === null) // failOver killed one
        .map(async (child) => {
          const exited = once(child, 'exit');
          child.kill('SIGKILL');
          await exited;
        }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}
