/**
 * The soak's world (bench/soak/run.ts): Redis (or a Redis Cluster), PostgreSQL, the upstream
 * simulator and 3 gateway replicas in processes of their own, configured for the day. Loopback
 * only. Each thing is handed to `running` as it starts, so that stopEverything ends it when the run
 * fails midway.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { startGatewayProcess, type GatewayProcess } from '../../test/support/gateway-process.js';
import { apiKeysWith } from '../../test/support/gateway.js';
import { PostgresServer } from '../../test/support/postgres-server.js';
import { RedisCluster } from '../../test/support/redis-cluster.js';
import { RedisServer } from '../../test/support/redis-server.js';
import { TRACKING_SHAPES } from '../../test/upstream-simulator/tracking-service.js';
import { UpstreamSimulator } from '../../test/upstream-simulator/upstream-simulator.js';
import { rssOf } from './report.js';
import type { SoakPlan } from './run-state.js';

/** The soak's own API clients, beside the test ones (TEST_CLIENTS). */
export const BUDGETED = {
  clientId: 'svc-budgeted',
  key: 'key-budgeted-0123456789',
  scopes: ['kyc:iban', 'inquiries:read'],
};
export const ADDED = {
  clientId: 'app-added',
  key: 'key-added-0123456789',
  scopes: ['kyc:card-to-iban', 'inquiries:read'],
};
export const OPERATOR = {
  clientId: 'ops-soak',
  key: 'key-ops-soak-0123456789',
  scopes: ['ledger:read', 'ledger:reconcile'],
};

const REPLICAS = 3;

/** What a run started and must stop, also when it fails midway (stopEverything). */
export type Running = Set<() => unknown>;

export class SoakWorld {
  /** The replica now in each slot: a restart puts a new process in its slot. */
  readonly replicas: GatewayProcess[] = [];
  /** Every replica process the run started, killed ones too: their logs explain an imbalance. */
  readonly everyReplica: { index: number; process: GatewayProcess }[] = [];

  private constructor(
    readonly redis: RedisServer | undefined,
    readonly cluster: RedisCluster | undefined,
    readonly postgres: PostgresServer,
    readonly sim: UpstreamSimulator,
    /** Signs the end users' JWTs; the replicas hold its public half. */
    readonly jwtSigningKey: KeyObject,
    private readonly build: string,
    /** The replicas' environment, a restarted one's too. */
    private readonly env: Record<string, string>,
  ) {}

  static async start(plan: SoakPlan, running: Running): Promise<SoakWorld> {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    // Each store is handed to `running` once it is up, and a failure waits for the others to settle:
    // a store that fails to start leaves none of the others running past stopEverything.
    const redisUp = plan.cluster
      ? undefined
      : RedisServer.start({ args: plan.redisEmpty ? [] : ['--appendonly', 'yes', '--appendfsync', 'always'] }).then(
          handedTo(running, (redis) => redis.kill()),
        );
    const clusterUp = plan.cluster
      ? RedisCluster.start(3, undefined, 1).then(handedTo(running, (cluster) => cluster.stop()))
      : undefined;
    const postgresUp = PostgresServer.start().then(handedTo(running, (postgres) => postgres.kill()));
    await Promise.allSettled([redisUp, clusterUp, postgresUp]);
    const [redis, cluster, postgres] = await Promise.all([redisUp, clusterUp, postgresUp]);
    const sim = new UpstreamSimulator();
    await sim.start(0);
    running.add(() => sim.stop());
    const env = gatewayEnv(plan, {
      upstream: sim.baseUrl,
      redis: cluster ? { REDIS_CLUSTER_NODES: cluster.nodes } : { REDIS_URL: redis!.url },
      ledger: postgres.url,
      jwtPublicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const world = new SoakWorld(redis, cluster, postgres, sim, privateKey, plan.build, env);
    running.add(() => {
      for (const replica of world.replicas) replica.process.kill('SIGKILL');
    });
    await world.startReplicas();
    return world;
  }

  private async startReplicas(): Promise<void> {
    const starts = await Promise.allSettled(
      Array.from({ length: REPLICAS }, () => startGatewayProcess(this.build, this.env)),
    );
    // Those that started are in `replicas`, stopEverything's list, also when another one failed.
    for (const start of starts) if (start.status === 'fulfilled') this.replicas.push(start.value);
    const failed = starts.find((start) => start.status === 'rejected');
    if (failed) throw failed.reason;
    this.replicas.forEach((process, index) => this.everyReplica.push({ index, process }));
  }

  /** Stops the replica in slot `index` with `signal`, waits for it to exit, and starts a new one there. */
  async restartReplica(index: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const old = this.replicas[index];
    old.process.kill(signal);
    await old.exited;
    this.replicas[index] = await startGatewayProcess(this.build, this.env);
    this.everyReplica.push({ index, process: this.replicas[index] });
  }

  /** A replica's resident memory from its /metrics; undefined when it cannot be read. */
  async residentBytes(replica: GatewayProcess): Promise<number | undefined> {
    try {
      return rssOf(await (await fetch(`${replica.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text());
    } catch {
      return undefined;
    }
  }

  /** The end of a run that got there: the replicas drain (SIGTERM), then the simulator and the stores stop. */
  async stop(): Promise<void> {
    for (const replica of this.replicas) replica.process.kill('SIGTERM');
    await Promise.all(this.replicas.map((r) => r.exited));
    await this.sim.stop();
    await Promise.all([this.redis?.stop(), this.cluster?.stop(), this.postgres.stop()]);
  }
}

/** The replicas' configuration: the soak's clients, a budget, an added operation, prices, reuse, end users' JWTs. */
function gatewayEnv(
  plan: SoakPlan,
  to: { upstream: string; redis: Record<string, string>; ledger: string; jwtPublicKey: string },
): Record<string, string> {
  return {
    UPSTREAM_BASE_URL: to.upstream,
    ...to.redis,
    LEDGER_DATABASE_URL: to.ledger,
    LOG_LEVEL: 'info', // startGatewayProcess waits for the 'listening on port' line
    UPSTREAM_TIMEOUT_MS: '1500',
    UPSTREAM_ADVANCED_TIMEOUT_MS: '1500',
    API_KEYS: apiKeysWith(BUDGETED, ADDED, OPERATOR),
    COST_UNIT_PRICE: JSON.stringify(plan.unitPrice),
    BUDGETS: JSON.stringify([{ clientId: BUDGETED.clientId, daily: plan.budgetDailyUnits }]),
    INQUIRY_OPERATIONS: JSON.stringify([
      {
        name: 'card-to-iban',
        upstreamPath: '/api/v5/KYC/CardToIban',
        advanced: false,
        fields: { cardNumber: { type: 'cardNumber' } },
      },
    ]),
    INQUIRY_PRICES: JSON.stringify({
      shahkar: { standard: 1, advanced: 3 },
      iban: { standard: 1, advanced: 3 },
      'card-to-iban': { standard: 2 },
    }),
    INQUIRY_REUSE: JSON.stringify({
      shahkar: { maxAgeSeconds: 3600, share: 'client' },
      iban: { maxAgeSeconds: 86400, share: 'client' },
    }),
    REUSE_HMAC_KEY: 'soak-reuse-hmac-key-0123456789abcdef0123',
    UPSTREAM_TRACKING: JSON.stringify({ ...TRACKING_SHAPES.statusInBody, afterSeconds: 1, perMinute: 60 }),
    JWT_PUBLIC_KEY: to.jwtPublicKey,
    JWT_ISSUER: 'soak',
    JWT_AUDIENCE: 'verification-gateway',
  };
}

/** Passes a thing that started through, handing `running` the way to stop it. */
function handedTo<T>(running: Running, stop: (thing: T) => unknown): (thing: T) => T {
  return (thing) => {
    running.add(() => stop(thing));
    return thing;
  };
}
