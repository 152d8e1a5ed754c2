/**
 * The typed client as an app developer gets it: clients/typescript built and `npm pack`ed, the
 * tarball installed into a fresh consumer project, the consumer's code type-checked against the
 * package's published types and run against a live gateway and the upstream simulator. The
 * consumer makes a synchronous inquiry, an asynchronous one (202, then long-polls) and an
 * inquiry whose first answer is lost on the way back (the connection drops after the gateway
 * answered): the client's retry, with the same Idempotency-Key, gets the stored answer, and the
 * upstream charged every trackId once; and it asks for an operation a deployment adds, by name,
 * its fields typed with OperationFields (a 404 here: this deployment lacks it). The same install
 * serves a CommonJS app too (the package ships both builds): its TypeScript, compiled as
 * CommonJS, `require`s the package and inquires.
 */
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { startGateway, TEST_CLIENTS, untilStarted, type RunningGateway } from './support/gateway.js';

const ROOT = new URL('..', import.meta.url).pathname;
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** The consumer's code: what an app developer writes against the package. */
const CONSUMER = `
import {
  VerificationGatewayClient,
  type Result,
  type InquiryRecord,
  type OperationFields,
} from '@verification-gateway/client';

// No @types/node: the package's types must stand alone, as in a web or React Native app.
declare const process: { env: Record<string, string | undefined> };

const baseUrl = process.env.GATEWAY_URL!;
const apiKey = process.env.API_KEY!;
const shahkar = { nationalCode: '0499370899', mobileNumber: '09121234567' };

const client = new VerificationGatewayClient({ baseUrl, apiKey });

// 1. Synchronous: the key used is in the result, to retry by hand.
const sync = await client.shahkar(shahkar);

// 2. Asynchronous: 202, then long-polls until the record settles.
const settled: Result<InquiryRecord> = await client.inquire(
  'shahkar',
  { ...shahkar, requestHandlingType: 'advanced' },
  { async: { pollSeconds: 10 } },
);

// 3. The first answer is lost after the gateway sent it; the retry (same key) is answered from it.
let dropped = 0;
const flaky = new VerificationGatewayClient({
  baseUrl,
  apiKey,
  retry: { baseDelayMs: 10 },
  fetch: async (request) => {
    const response = await fetch(request);
    if (dropped++ === 0) {
      await response.arrayBuffer();
      throw new TypeError('fetch failed: connection reset');
    }
    return response;
  },
});
const retried = await flaky.iban({ iban: 'IR820540102680020817909002' });

// 4. An operation a deployment adds, typed from its /docs-json (openapi-typescript's \`paths\`);
// this gateway's catalog lacks it: a typed 404.
interface DeploymentPaths {
  '/v1/kyc/card-to-iban': {
    post: { requestBody: { content: { 'application/json': { cardNumber: string; requestHandlingType?: 'advanced' } } } };
  };
}
const card: OperationFields<DeploymentPaths, 'card-to-iban'> = { cardNumber: '6037991234567893' };
const added = await client.inquire('card-to-iban', card);
// @ts-expect-error: a built-in's name keeps its own fields
const mistyped = () => client.inquire('shahkar', { cardNumber: '6037991234567893' });
void mistyped;

const summary = (r: Result<unknown>) => ({
  ok: r.ok,
  status: r.status,
  trackId: r.trackId,
  idempotencyKey: r.idempotencyKey,
  replayed: r.replayed,
  attempts: r.attempts,
  data: r.ok ? r.data : r.problem,
});
console.log(
  JSON.stringify({ sync: summary(sync), settled: summary(settled), retried: summary(retried), added: summary(added) }),
);
`;

/** A CommonJS app (`"type": "commonjs"`): compiled to require() calls, no top-level await. */
const CJS_CONSUMER = `
import { VerificationGatewayClient } from '@verification-gateway/client';

declare const process: { env: Record<string, string | undefined> };
declare const console: { log(line: string): void };

async function main(): Promise<void> {
  const client = new VerificationGatewayClient({ baseUrl: process.env.GATEWAY_URL!, apiKey: process.env.API_KEY! });
  const result = await client.iban({ iban: 'IR820540102680020817909002' });
  console.log(JSON.stringify({ status: result.status, trackId: result.trackId }));
}
void main();
`;

interface Summary {
  ok: boolean;
  status: number;
  trackId?: string;
  idempotencyKey?: string;
  replayed: boolean;
  attempts: number;
  data: Record<string, unknown>;
}

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}:\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

describe('clients/typescript as a packed package in a consumer project', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let work: string;
  let consumer: string;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl });
    // The first token attempt has finished (startup probe), as before real traffic.
    await untilStarted(gateway.app);
    work = mkdtempSync(join(tmpdir(), 'vgw-client-'));

    // Build and pack the package from a copy (its dist/ never lands in the work tree).
    const pkg = join(work, 'client');
    cpSync(join(ROOT, 'clients/typescript'), pkg, { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
    run('npm', ['run', '--silent', 'build'], pkg);
    run('npm', ['pack', '--silent'], pkg);
    const tarball = readdirSync(pkg).find((name) => name.endsWith('.tgz'))!;

    // A fresh project that depends on the tarball (openapi-fetch comes from the npm cache).
    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: {} }),
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          lib: ['ES2022', 'DOM'],
          types: [],
          outDir: 'dist',
        },
        include: ['index.ts'],
      }),
    );
    writeFileSync(join(consumer, 'index.ts'), CONSUMER);
    // The CommonJS app beside it, resolving the same node_modules one folder up.
    const cjs = join(consumer, 'cjs-app');
    mkdirSync(cjs);
    writeFileSync(join(cjs, 'package.json'), JSON.stringify({ name: 'cjs-app', private: true, type: 'commonjs' }));
    writeFileSync(
      join(cjs, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true, types: [], outDir: 'dist' },
        include: ['index.ts'],
      }),
    );
    writeFileSync(join(cjs, 'index.ts'), CJS_CONSUMER);
    run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', join(pkg, tarball)],
      consumer,
    );
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await sim?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs only dist/ (ES module and CommonJS builds), the README and package.json from the tarball', () => {
    const installed = join(consumer, 'node_modules/@verification-gateway/client');
    expect(readdirSync(installed).sort()).toEqual(['README.md', 'dist', 'package.json']);
    expect(readdirSync(join(installed, 'dist'))).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'cjs']));
    expect(readdirSync(join(installed, 'dist/cjs'))).toEqual(expect.arrayContaining(['index.js', 'index.d.ts']));
  });

  it('loads in a CommonJS app: type-checked as CommonJS, required, and inquiring', async () => {
    const cjs = join(consumer, 'cjs-app');
    run(process.execPath, [TSC, '-p', 'tsconfig.json'], cjs);
    // Compiled to require(), not import: the app is CommonJS through and through.
    expect(readFileSync(join(cjs, 'dist/index.js'), 'utf8')).toContain('require("@verification-gateway/client")');
    const { stdout } = await promisify(execFile)(process.execPath, ['dist/index.js'], {
      cwd: cjs,
      env: { ...process.env, GATEWAY_URL: gateway.url, API_KEY: TEST_CLIENTS.full.key },
      timeout: 30_000,
    });
    const answer = JSON.parse(stdout) as { status: number; trackId: string };
    expect(answer.status).toBe(200);
    expect(sim.chargeCount(answer.trackId)).toBe(1);
  });

  it('type-checks the consumer against the published types, and runs it: sync, async, and a retry after a lost answer', async () => {
    // Type-check and compile with the package's .d.ts (strict): a wrong call would fail here.
    run(process.execPath, [TSC, '-p', 'tsconfig.json'], consumer);
    // Each supplier attempt takes 300 ms: the async inquiry is answered 202 and settles later.
    sim.setSupplierLatency(300);
    let out: string;
    try {
      // Asynchronously: the gateway answering it runs in this process.
      ({ stdout: out } = await promisify(execFile)(process.execPath, ['dist/index.js'], {
        cwd: consumer,
        env: { ...process.env, GATEWAY_URL: gateway.url, API_KEY: TEST_CLIENTS.full.key },
        timeout: 60_000,
      }));
    } finally {
      sim.setSupplierLatency(0);
    }
    const { sync, settled, retried, added } = JSON.parse(out) as Record<
      'sync' | 'settled' | 'retried' | 'added',
      Summary
    >;

    // Status and body first: on a failure the problem's code and detail show in the diff.
    expect({ status: sync.status, data: sync.data }).toMatchObject({ status: 200, data: { status: 'succeeded' } });
    expect(sync).toMatchObject({ ok: true, status: 200, replayed: false, attempts: 1 });
    expect(sync.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);

    // 202 then long-polls: the settled record, read in one poll (woken by the settlement).
    expect(settled).toMatchObject({ ok: true, status: 200, attempts: 2 });
    expect(settled.data).toMatchObject({ status: 'succeeded', requestHandlingType: 'advanced' });
    expect(settled.trackId).toBe(settled.data.trackId);

    // The lost answer: one retry with the same key, answered from the stored outcome.
    expect(retried).toMatchObject({ ok: true, status: 200, replayed: true, attempts: 2 });
    expect(retried.trackId).toBe(retried.data.trackId);

    for (const trackId of [sync.trackId!, settled.trackId!, retried.trackId!]) {
      expect([trackId, sim.chargeCount(trackId)]).toEqual([trackId, 1]);
    }
    expect(sim.requests.filter((r) => r.trackId === retried.trackId)).toHaveLength(1);

    // An added operation's name, typed by OperationFields: this deployment has no such route.
    expect(added).toMatchObject({ ok: false, status: 404, data: { code: 'not_found' } });
  });
});
