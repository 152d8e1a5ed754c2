/**
 * The upstream circuit breaker (docs/api.md §3: 503 upstream_unavailable "circuit open"):
 * repeated upstream failures stop inquiries at the gateway, a trial call after the reset
 * time closes it again, and business answers (4xx) never count as failures.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, callGateway, startGateway, type RunningGateway, untilStarted } from './support/gateway.js';
import { SHAHKAR } from './support/fixtures.js';

describe('upstream circuit breaker', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, UPSTREAM_CIRCUIT_RESET_MS: '500' });
    await untilStarted(gateway.app);
  });
  afterAll(async () => {
    await gateway.close();
    await sim.stop();
  });

  const shahkar = (key?: string) =>
    callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
      headers: key ? { 'idempotency-key': key } : {},
    });
  /** The circuit as operators see it: the `vgw_upstream_circuit_open` gauge on /metrics. */
  const circuitOpen = async () => {
    const { text } = await callGateway(gateway.url, 'GET', '/metrics');
    return /^vgw_upstream_circuit_open 1$/m.test(text);
  };

  it('business rejections (upstream 4xx) never open it', async () => {
    sim.setFieldValidator(() => [{ field: 'nationalCode', message: 'not registered' }]);
    try {
      for (let i = 0; i < 12; i++) expect((await shahkar()).status).toBe(422);
    } finally {
      sim.setFieldValidator(() => []);
    }
    expect(await circuitOpen()).toBe(false);
  });

  it('opens after repeated upstream failures, refuses without calling upstream, and closes after a good trial', async () => {
    // Failures must reach half of the calls in the rolling 10 s window (which also holds the
    // 12 answered calls of the test before): at most 30 failures are sent.
    let failures = 0;
    while (!(await circuitOpen()) && failures < 30) {
      sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500' });
      expect((await shahkar()).status).toBe(502);
      failures += 1;
    }
    expect(await circuitOpen()).toBe(true);
    expect(failures).toBeGreaterThanOrEqual(10);

    const calls = sim.inquiryCalls;
    const refused = await shahkar('during-open');
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ code: 'upstream_unavailable' });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('x-track-id')).toBe(refused.body.trackId);
    expect(sim.inquiryCalls).toBe(calls);
    const record = await callGateway(gateway.url, 'GET', `/v1/inquiries/${String(refused.body.trackId)}`, {
      apiKey: TEST_CLIENTS.full.key,
    });
    expect(record.body.status).toBe('failed');

    // Nothing was sent under that key, so it was released: the same key runs for real once the
    // reset time (500 ms) lets a trial through; until then each retry is refused and released.
    let retried = refused;
    for (const deadline = Date.now() + 5000; retried.status === 503 && Date.now() < deadline;) {
      await delay(50);
      retried = await shahkar('during-open');
    }
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await circuitOpen()).toBe(false);
    expect(sim.inquiryCalls).toBe(calls + 1);
    expect((await shahkar()).status).toBe(200);
  });
});
