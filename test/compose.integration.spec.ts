/**
 * The local stack (compose.yaml, docs/local-stack.md) checked without a container engine:
 * its services, ports and environment against the gateway's configuration class and the
 * simulator's entry point; and the simulator built the way its Dockerfile builds it, started
 * with the compose environment, answering a token request with the gateway's credentials.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import 'reflect-metadata';
import { parse } from 'yaml';
import { SCOPES } from '../src/config/app-config.js';
import { BUILT_IN_OPERATIONS } from '../src/inquiry/catalog/built-in-operations.js';
import { loadConfig } from '../src/config/load-config.js';
import { nextEvent } from './support/events.js';
import { freePort } from './support/redis-server.js';

const ROOT = new URL('..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface Service {
  build?: { context: string; dockerfile?: string; args?: Record<string, string> };
  image?: string;
  environment?: Record<string, string>;
  ports?: string[];
  command?: string[];
  depends_on?: Record<string, { condition: string }>;
  read_only?: boolean;
}
const compose = parse(read('compose.yaml')) as { services: Record<string, Service> };
const { gateway, redis, simulator, postgres } = compose.services;

/** The variables the gateway reads: the properties of its validated environment class. */
const GATEWAY_VARIABLES = new Set(
  [...read('src/config/environment.ts').matchAll(/^ {2}([A-Z][A-Z0-9_]+)[!?]?(?::| =)/gm)].map((m) => m[1]),
);

describe('compose.yaml (local stack)', () => {
  const work = mkdtempSync(join(tmpdir(), 'vgw-compose-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('has the gateway (built from the Dockerfile), Redis, PostgreSQL and the simulator', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['gateway', 'postgres', 'redis', 'simulator']);
    expect(postgres.image).toMatch(/^postgres:\d/);
    expect(gateway.build).toMatchObject({ context: '.' });
    expect(gateway.build?.dockerfile).toBeUndefined();
    expect(simulator.build).toEqual({ context: '.', dockerfile: 'test/upstream-simulator/Dockerfile' });
    expect(redis.image).toMatch(/^redis:\d/);
    expect(gateway.depends_on).toEqual({
      redis: { condition: 'service_healthy' },
      postgres: { condition: 'service_healthy' },
      simulator: { condition: 'service_started' },
    });
    expect(gateway.read_only).toBe(true);
  });

  it('configures the gateway with variables it reads, pointing at the other services', () => {
    const env = gateway.environment!;
    expect(Object.keys(env).filter((name) => !GATEWAY_VARIABLES.has(name))).toEqual([]);
    const upstream = new URL(env.UPSTREAM_BASE_URL);
    expect(upstream.hostname).toBe('simulator');
    expect(upstream.port).toBe(simulator.environment!.SIMULATOR_PORT);
    expect([env.UPSTREAM_USERNAME, env.UPSTREAM_PASSWORD]).toEqual([
      simulator.environment!.SIMULATOR_USERNAME,
      simulator.environment!.SIMULATOR_PASSWORD,
    ]);
    const store = new URL(env.REDIS_URL);
    expect([store.hostname, store.port]).toEqual(['redis', '6379']);
    const ledger = new URL(env.LEDGER_DATABASE_URL);
    expect([ledger.hostname, ledger.port, ledger.username, ledger.password, ledger.pathname]).toEqual([
      'postgres',
      '5432',
      postgres.environment!.POSTGRES_USER,
      postgres.environment!.POSTGRES_PASSWORD,
      `/${postgres.environment!.POSTGRES_DB}`,
    ]);
    // The documented key is the one configured (by its hash).
    const key = /X-Api-Key: ([\w-]+)/.exec(read('docs/local-stack.md'))![1];
    const [entry] = JSON.parse(env.API_KEYS) as Array<{ keySha256: string; scopes: string[] }>;
    expect(entry.keySha256).toBe(createHash('sha256').update(key).digest('hex'));
    // Every scope: each built-in operation's, and ledger:read opens the console and the ledger's
    // reads, as the docs promise.
    const operationScopes = BUILT_IN_OPERATIONS.map((operation) => `kyc:${operation.name}`);
    expect([...entry.scopes].sort()).toEqual([...SCOPES, ...operationScopes].sort());
    // Published on loopback only, on the ports the gateway listens on.
    expect(gateway.ports).toEqual([`127.0.0.1:${env.PORT}:${env.PORT}`, `127.0.0.1:${env.OPS_PORT}:${env.OPS_PORT}`]);
    expect(simulator.ports).toEqual([`127.0.0.1:4010:${simulator.environment!.SIMULATOR_PORT}`]);
  });

  it('builds the gateway with a BUILD_COMMIT its configuration accepts, as the Dockerfile’s default is', () => {
    // `${BUILD_COMMIT:-unknown}` as compose interpolates it when the variable is unset.
    const composed = gateway.build!.args!.BUILD_COMMIT.replace(/^\$\{\w+:-(.*)\}$/, '$1');
    const dockerDefault = /^ARG BUILD_COMMIT=(.*)$/m.exec(read('Dockerfile'))![1];
    for (const commit of [composed, dockerDefault]) {
      expect(loadConfig({ ...gateway.environment, BUILD_COMMIT: commit }).build.commit).toBe(commit);
    }
  });

  it('sets only the variables the simulator’s entry point reads', () => {
    const main = read('test/upstream-simulator/main.ts');
    for (const name of Object.keys(simulator.environment!)) expect(main).toContain(`env.${name}`);
  });

  it('copies into the simulator image every source its entry point imports (the Dockerfile and its .dockerignore)', () => {
    const dockerfile = read('test/upstream-simulator/Dockerfile').replace(/\\\n\s*/g, ' ');
    const copied = /^COPY (test\/upstream-simulator\/.+) \.\/test\/upstream-simulator\/$/m
      .exec(dockerfile)![1]
      .split(/\s+/);
    const admitted = read('test/upstream-simulator/Dockerfile.dockerignore')
      .split('\n')
      .filter((line) => line.startsWith('!'))
      .map((line) => line.slice(1));
    // The entry point and what it imports, transitively, by relative path.
    const sources = new Set<string>(['test/upstream-simulator/main.ts']);
    for (const file of sources) {
      for (const [, name] of read(file).matchAll(/from '\.\/([\w-]+)\.js'/g))
        sources.add(`test/upstream-simulator/${name}.ts`);
    }
    expect(sources.size).toBeGreaterThan(1);
    for (const source of sources) {
      expect({ source, copied: copied.includes(source), admitted: admitted.includes(source) }).toEqual({
        source,
        copied: true,
        admitted: true,
      });
    }
  });

  it('builds and starts the simulator as its Dockerfile does, serving the compose credentials', async () => {
    const dockerfile = read('test/upstream-simulator/Dockerfile');
    // The Dockerfile's compile step, run here (node_modules linked in as `npm ci` installs it).
    const tsc = /RUN npx (tsc [^]*?main\.ts)/
      .exec(dockerfile)![1]
      .replace(/\\\n\s*/g, '')
      .split(/\s+/);
    const [, ...cmd] = JSON.parse(/^CMD (.+)$/m.exec(dockerfile)![1]) as string[];
    // A copy of the image's /app: package.json, node_modules and the simulator's sources.
    writeFileSync(join(work, 'package.json'), read('package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
    mkdirSync(join(work, 'test'));
    symlinkSync(join(ROOT, 'test', 'upstream-simulator'), join(work, 'test', 'upstream-simulator'));
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), ...tsc.slice(1)], { cwd: work });
    const port = await freePort();
    const sim = spawn(process.execPath, cmd, {
      cwd: work,
      env: {
        PATH: process.env.PATH,
        ...simulator.environment,
        SIMULATOR_HOST: '127.0.0.1',
        SIMULATOR_PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      sim.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await nextEvent(sim.stdout, 'data', () => out.includes('listening on'), 20_000);
      expect((await fetch(`http://127.0.0.1:${port}/__simulator/state`)).status).toBe(200);
      // The gateway's configured credentials get a token (API v5 GetToken).
      const env = gateway.environment!;
      const token = await fetch(`http://127.0.0.1:${port}/api/v5/Authentication/GetToken`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: env.UPSTREAM_USERNAME, password: env.UPSTREAM_PASSWORD }),
      });
      expect(((await token.json()) as { meta: { isSuccess: boolean } }).meta.isSuccess).toBe(true);
    } finally {
      const exited = nextEvent(sim, 'exit', () => true, 10_000);
      sim.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});
