/**
 * OPS_PORT (docs/operations.md): `/metrics` and `/docs` on their own port, for Prometheus and
 * operators, and 404 on the main port an Ingress publishes; inquiries and probes on the main
 * port only; requests on both ports logged and counted alike; both ports closed on shutdown.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig, ConfigError } from '../src/config/load-config.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR } from './support/fixtures.js';
import { freePort } from './support/redis-server.js';
import { TEST_API_KEYS, TEST_CLIENTS, callGateway, startGateway, type RunningGateway } from './support/gateway.js';

/** Whether something accepts connections on the port. */
function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('OPS_PORT', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let opsPort: number;
  let ops: string;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    opsPort = await freePort();
    gateway = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, OPS_PORT: String(opsPort) });
    ops = `http://127.0.0.1:${opsPort}`;
  });

  afterAll(async () => {
    await gateway.close();
    await sim.stop();
  });

  it('serves /metrics and /docs on the ops port, and 404 problem+json for them on the main port', async () => {
    for (const path of ['/metrics', '/docs', '/docs-json']) {
      expect({ path, status: (await callGateway(ops, 'GET', path)).status }).toEqual({ path, status: 200 });
      const hidden = await callGateway(gateway.url, 'GET', path);
      expect({ path, status: hidden.status, code: hidden.body.code }).toEqual({ path, status: 404, code: 'not_found' });
      expect(hidden.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });

  it('serves inquiries and probes on the main port only', async () => {
    const main = await callGateway(gateway.url, 'POST', '/v1/kyc/shahkar', {
      apiKey: TEST_CLIENTS.full.key,
      json: SHAHKAR,
    });
    expect(main.status).toBe(200);
    expect((await callGateway(gateway.url, 'GET', '/health/ready')).status).toBe(200);
    const onOps = await callGateway(ops, 'POST', '/v1/kyc/shahkar', { apiKey: TEST_CLIENTS.full.key, json: SHAHKAR });
    expect({ status: onOps.status, code: onOps.body.code }).toEqual({ status: 404, code: 'not_found' });
    expect((await callGateway(ops, 'GET', '/health/ready')).status).toBe(404);
  });

  it('gives ops-port requests the same request ids and metrics as any other', async () => {
    const scrape = await callGateway(ops, 'GET', '/metrics', { headers: { 'x-request-id': 'scrape-1' } });
    expect(scrape.headers.get('x-request-id')).toBe('scrape-1');
    const text = (await callGateway(ops, 'GET', '/metrics')).text;
    expect(text).toMatch(
      /vgw_http_request_duration_seconds_count\{route="\/metrics",method="GET",status="200"[^}]*\} [1-9]/,
    );
    expect(text).toMatch(
      /vgw_http_request_duration_seconds_count\{route="\/metrics",method="GET",status="404"[^}]*\} [1-9]/,
    );
  });

  it('closes both ports on shutdown', async () => {
    const port = await freePort();
    const other = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, OPS_PORT: String(port) });
    const mainPort = Number(new URL(other.url).port);
    expect([await accepting(mainPort), await accepting(port)]).toEqual([true, true]);
    await other.close();
    expect([await accepting(mainPort), await accepting(port)]).toEqual([false, false]);
  });

  it('refuses an OPS_PORT equal to PORT, or not a port, naming the variable', () => {
    const base = {
      UPSTREAM_BASE_URL: sim.baseUrl,
      UPSTREAM_USERNAME: 'u',
      UPSTREAM_PASSWORD: 'p',
      API_KEYS: TEST_API_KEYS,
    };
    for (const env of [{ PORT: '3000', OPS_PORT: '3000' }, { OPS_PORT: 'metrics' }, { OPS_PORT: '70000' }]) {
      const error = (() => {
        try {
          loadConfig({ ...base, ...env });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.some((p) => p.startsWith('OPS_PORT'))).toBe(true);
    }
  });
});
