/**
 * Redis as operators run it: a password, an ACL user, TLS with client certificates, for
 * standalone, Sentinel and Cluster, each against real redis-server processes started here
 * (certificates made with openssl). A wrong password or an untrusted certificate keeps the
 * gateway running and unready, with one error line that says why.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { CapturedLog } from './support/captured-log.js';
import { nextEvent } from './support/events.js';
import { SHAHKAR } from './support/fixtures.js';
import { TEST_CLIENTS, callGateway, startGateway, untilStoreReady, type RunningGateway } from './support/gateway.js';
import { RedisCluster } from './support/redis-cluster.js';
import { RedisSentinel } from './support/redis-sentinel.js';
import { RedisServer } from './support/redis-server.js';
import { makeCertificates, type TestCertificates } from './support/tls-certificates.js';

const PASSWORD = 'r3dis-Pa55-Xq7!';
const ACL_USER = 'vgw-app';

describe('Redis with passwords, ACL users and TLS', () => {
  let sim: UpstreamSimulator;
  let certs: TestCertificates;
  let secrets: string;
  const started: Array<{ stop(): Promise<void> }> = [];
  let gateway: RunningGateway | undefined;

  /** A file holding `content`, as a mounted Kubernetes Secret would. */
  function secretFile(name: string, content: string): string {
    const path = join(secrets, name);
    writeFileSync(path, `${content}\n`);
    return path;
  }

  async function redis(...args: Parameters<typeof RedisServer.start>): Promise<RedisServer> {
    const server = await RedisServer.start(...args);
    started.push(server);
    return server;
  }

  /** An inquiry is recorded and read back: commands, Lua scripts and pub/sub all work. */
  async function expectInquiriesWork(target: RunningGateway): Promise<void> {
    await untilStoreReady(target);
    expect((await fetch(`${target.url}/health/ready`)).status).toBe(200);
    const answer = await callGateway(target.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: { 'idempotency-key': `auth-${Date.now()}-${Math.random()}` },
    });
    expect(answer.status).toBe(200);
    const record = await callGateway(target.url, 'GET', `/v1/inquiries/${String(answer.body.trackId)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(record.status).toBe(200);
  }

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    certs = await makeCertificates();
    secrets = mkdtempSync(join(tmpdir(), 'vgw-redis-secrets-'));
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await sim.stop();
    certs.remove();
    rmSync(secrets, { recursive: true, force: true });
  });

  it('standalone, requirepass: the password in REDIS_URL', async () => {
    const server = await redis({ args: ['--requirepass', PASSWORD] });
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: `redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${server.port}`,
    });
    await expectInquiriesWork(gateway);
  });

  it('standalone, an ACL user (default user off): REDIS_USERNAME and REDIS_PASSWORD_FILE', async () => {
    const server = await redis({
      args: ['--user', ACL_USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all', '--user', 'default', 'off'],
    });
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: server.url,
      REDIS_USERNAME: ACL_USER,
      REDIS_PASSWORD_FILE: secretFile('redis-password', PASSWORD),
    });
    await expectInquiriesWork(gateway);
  });

  it('a wrong password: the gateway keeps running, unready, with one error line naming the variables (never the password)', async () => {
    const server = await redis({ args: ['--requirepass', PASSWORD] });
    const log = new CapturedLog();
    const refused = nextEvent<string>(log, 'line', (line) => line.startsWith('error: Redis:'), 10_000);
    gateway = await startGateway(
      { UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: server.url, REDIS_PASSWORD: 'not-the-password' },
      { logger: log },
    );
    const line = await refused;
    expect(line).toMatch(/connection refused by Redis: WRONGPASS/);
    expect(line).toContain('REDIS_PASSWORD(_FILE)');
    expect((await fetch(`${gateway.url}/health/ready`)).status).toBe(503);
    expect((await fetch(`${gateway.url}/health/live`)).status).toBe(200);
    const inquiry = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    });
    expect(inquiry.status).toBe(503);
    expect(inquiry.body.code).toBe('store_unavailable');
    expect(log.lines.join('\n')).not.toContain('not-the-password');
    // Retried, not repeated: the same cause is logged once, however often the reconnection fails.
    expect(log.lines.filter((l) => l.includes('commands connection refused by Redis')).length).toBe(1);
  });

  it('standalone over TLS with a client certificate: rediss:// and REDIS_TLS_CA/CERT/KEY_FILE', async () => {
    const server = await redis({ tls: certs, args: ['--requirepass', PASSWORD] });
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_URL: server.url,
      REDIS_PASSWORD: PASSWORD,
      REDIS_TLS_CA_FILE: certs.caCert,
      REDIS_TLS_CERT_FILE: certs.clientCert,
      REDIS_TLS_KEY_FILE: certs.clientKey,
    });
    expect(server.url).toMatch(/^rediss:\/\//);
    await expectInquiriesWork(gateway);
  });

  it('TLS with an untrusted CA: unready, with an error line about the certificate', async () => {
    const server = await redis({ tls: certs });
    const log = new CapturedLog();
    const refused = nextEvent<string>(log, 'line', (line) => line.startsWith('error: Redis:'), 10_000);
    gateway = await startGateway(
      {
        UPSTREAM_BASE_URL: sim.baseUrl,
        REDIS_URL: server.url,
        REDIS_TLS_CA_FILE: certs.otherCaCert,
        REDIS_TLS_CERT_FILE: certs.clientCert,
        REDIS_TLS_KEY_FILE: certs.clientKey,
      },
      { logger: log },
    );
    expect(await refused).toMatch(/certificate.*REDIS_TLS_CA_FILE/);
    expect((await fetch(`${gateway.url}/health/ready`)).status).toBe(503);
    // The failing handshakes end with this test, not while the next one runs.
    await gateway.close();
    gateway = undefined;
    await server.stop();
  });

  it('Sentinel: a Sentinel password and an ACL user on the data node', async () => {
    const sentinel = await RedisSentinel.start('vgw-auth', {
      masterUser: ACL_USER,
      masterPassword: PASSWORD,
      sentinelPassword: 'sentinel-Pa55',
    });
    started.push(sentinel);
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_SENTINELS: sentinel.sentinels,
      REDIS_SENTINEL_NAME: sentinel.name,
      REDIS_SENTINEL_PASSWORD_FILE: secretFile('sentinel-password', 'sentinel-Pa55'),
      REDIS_USERNAME: ACL_USER,
      REDIS_PASSWORD_FILE: secretFile('redis-password', PASSWORD),
    });
    await expectInquiriesWork(gateway);
  });

  it('Cluster: a password and TLS on every node (REDIS_TLS=true)', async () => {
    const cluster = await RedisCluster.start(3, { password: PASSWORD, tls: certs });
    started.push(cluster);
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      REDIS_CLUSTER_NODES: cluster.nodes,
      REDIS_PASSWORD: PASSWORD,
      REDIS_TLS: 'true',
      REDIS_TLS_CA_FILE: certs.caCert,
      REDIS_TLS_CERT_FILE: certs.clientCert,
      REDIS_TLS_KEY_FILE: certs.clientKey,
    });
    await expectInquiriesWork(gateway);
  });
});
