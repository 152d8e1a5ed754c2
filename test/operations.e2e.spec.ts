/** Probes, metrics and OpenAPI (docs/api.md §4), with a real Redis that goes away. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamSimulator, type TokenEvent } from './upstream-simulator/upstream-simulator.js';
import { nextEvent } from './support/events.js';
import { TEST_CLIENTS, startGateway, untilStoreReady, type RunningGateway, untilStarted } from './support/gateway.js';
import { RedisServer } from './support/redis-server.js';

describe('operations endpoints', () => {
  let redis: RedisServer;
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;

  beforeAll(async () => {
    redis = await RedisServer.start();
    sim = new UpstreamSimulator({ latencyMs: 300 });
    await sim.start();
  });
  afterAll(async () => {
    await gateway?.close();
    await sim.stop();
    await redis.stop();
  });

  it('startup answers 503 until the first token attempt finished, then 200', async () => {
    const firstToken = nextEvent<TokenEvent>(sim, 'token');
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, REDIS_URL: redis.url });
    // GetToken takes 300 ms at the simulator: the attempt is still running.
    const early = await fetch(`${gateway.url}/health/startup`);
    expect(early.status).toBe(503);
    expect(await early.json()).toMatchObject({ status: 'error', error: { firstTokenAttempt: { status: 'down' } } });
    await firstToken;
    await untilStarted(gateway.app);
    const later = await fetch(`${gateway.url}/health/startup`);
    expect(later.status).toBe(200);
    sim.setLatency(0);
  });

  it('readiness follows Redis; liveness never does', async () => {
    const ready = await fetch(`${gateway.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', info: { store: { status: 'up', mode: 'redis' } } });

    await redis.kill();
    const notReady = await fetch(`${gateway.url}/health/ready`);
    expect(notReady.status).toBe(503);
    expect(notReady.headers.get('content-type')).toContain('application/json');
    expect(await notReady.json()).toMatchObject({ status: 'error', error: { store: { status: 'down' } } });
    expect((await fetch(`${gateway.url}/health/live`)).status).toBe(200);
    // With Redis gone an inquiry is refused before anything reaches the upstream.
    const calls = sim.inquiryCalls;
    const refused = await fetch(`${gateway.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_CLIENTS.full.key },
      body: JSON.stringify({ nationalCode: '0499370899', mobileNumber: '09121234567' }),
    });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: 'store_unavailable' });
    expect(sim.inquiryCalls).toBe(calls);

    const reconnected = untilStoreReady(gateway);
    await redis.restart();
    await reconnected;
    expect((await fetch(`${gateway.url}/health/ready`)).status).toBe(200);
  });

  it('metrics are Prometheus text with no secret in them', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    expect(text).toMatch(/vgw_token_renewals_total\{grant="credentials",result="success"\} 1/);
    expect(text).toContain('vgw_inquiries_total');
    expect(text).not.toContain('sandbox-password');
    expect(text).not.toContain(await gateway.tokens.getAccessToken());
  });

  it('OpenAPI 3 describes every endpoint of the contract', async () => {
    const document = (await (await fetch(`${gateway.url}/docs-json`)).json()) as {
      openapi: string;
      paths: Record<string, object>;
    };
    expect(document.openapi).toMatch(/^3\./);
    expect(Object.keys(document.paths).sort()).toEqual(
      [
        '/admin/status',
        '/docs',
        '/docs-json',
        '/health/live',
        '/health/ready',
        '/health/startup',
        '/metrics',
        '/admin/budgets',
        '/admin/ledger',
        '/admin/ledger/parked',
        '/admin/ledger/parked/{id}/redrive',
        '/admin/ledger/parked/{id}/discard',
        '/admin/me',
        '/admin/operator-actions',
        '/admin/reconciliations',
        '/admin/usage',
        '/admin/inquiries',
        '/admin/trends',
        '/admin/forecast',
        '/admin/webhooks/deliveries',
        '/admin/webhooks/deliveries/{id}/retry',
        '/v1/budget',
        '/v1/inquiries/{trackId}',
        '/v1/kyc/iban',
        '/v1/kyc/shahkar',
      ].sort(),
    );
    expect((await fetch(`${gateway.url}/docs`)).status).toBe(200);
  });

  it('readiness fails once shutdown begins', async () => {
    const closing = gateway.app.close();
    // The shutdown sequence's first steps run while the server still answers (test/shutdown.e2e.spec.ts).
    await closing;
    await expect(fetch(`${gateway.url}/health/live`)).rejects.toThrow();
    gateway = undefined as unknown as RunningGateway;
  });
});
