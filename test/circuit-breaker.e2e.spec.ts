/**
 * The upstream circuit breaker (internal-api.md §3: 503 upstream_unavailable "circuit open"):
 * repeated upstream failures stop inquiries at the gateway, a trial call after the reset
 * time closes it again, and business answers (4xx) never count as failures.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { CHECK_SHAHKAR_PATH, UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, callGateway, startGateway, type RunningGateway } from './support/gateway.js';
import { SHAHKAR } from './support/fixtures.js';

describe('upstream circuit breaker', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let circuit: UpstreamClient['circuit'];

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, UPSTREAM_CIRCUIT_RESET_MS: '500' });
    await gateway.tokens.firstAttempt;
    circuit = gateway.app.get(UpstreamClient).circuit;
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

  it('business rejections (upstream 4xx) never open it', async () => {
    sim.setFieldValidator(() => [{ field: 'nationalCode', message: 'not registered' }]);
    try {
      for (let i = 0; i < 12; i++) expect((await shahkar()).status).toBe(422);
    } finally {
      sim.setFieldValidator(() => []);
    }
    expect(circuit.opened).toBe(false);
  });

  it('opens after repeated upstream failures, refuses without calling upstream, and closes after a good trial', async () => {
    // Failures must reach half of the calls in the rolling 10 s window (which also holds the
    // 12 answered calls of the test before): at most 30 failures are sent.
    let failures = 0;
    while (!circuit.opened && failures < 30) {
      sim.injectFault({ path: CHECK_SHAHKAR_PATH, kind: 'http500' });
      expect((await shahkar()).status).toBe(502);
      failures += 1;
    }
    expect(circuit.opened).toBe(true);
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

    await once(circuit, 'halfOpen');
    const closed = once(circuit, 'close');
    // Nothing was sent under that key, so it was released: the same key now runs for real.
    const retried = await shahkar('during-open');
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    await closed;
    expect(sim.inquiryCalls).toBe(calls + 1);
    expect((await shahkar()).status).toBe(200);
  });
});
