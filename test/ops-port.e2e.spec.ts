/**
 * OPS_PORT (docs/operations.md): `/metrics` and `/docs` on their own port, for Prometheus and
 * operators, and 404 on the main port an Ingress publishes; inquiries and probes on the main
 * port only; requests on both ports logged and counted alike; both ports closed on shutdown.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig, ConfigError } from '../src/config/load-config.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { SHAHKAR } from './support/fixtures.js';
import { freePort } from './support/redis-server.js';
import {
  TEST_API_KEYS,
  TEST_CLIENTS,
  apiKeysWith,
  callGateway,
  startGateway,
  type RunningGateway,
} from './support/gateway.js';

/** An operator's key: reads the administration routes (docs/api.md §6). */
const OPERATOR = { clientId: 'ops-team', key: 'key-ops-team-0123456789', scopes: ['ledger:read'] };

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

/** A connection that sends nothing (as a browser's spare connection). */
function connected(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/**
 * Spellings of one path a client may send: every character percent-encoded alone (upper- and
 * lower-case hex), all of it encoded, case changed, dot segments, doubled and trailing slashes,
 * parameters, a query, a fragment, absolute-form with any scheme and host, and `*`.
 */
function spellings(path: string): string[] {
  const encode = (c: string, upper: boolean) => {
    const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
    return `%${upper ? hex.toUpperCase() : hex}`;
  };
  const out = new Set<string>([
    path,
    '*',
    path.toUpperCase(),
    path.replace(/\/(\w)/, (_m, c: string) => `/${c.toUpperCase()}`),
  ]);
  for (let i = 0; i < path.length; i++) {
    for (const upper of [true, false]) out.add(path.slice(0, i) + encode(path[i], upper) + path.slice(i + 1));
  }
  out.add([...path].map((c) => (c === '/' ? c : encode(c, true))).join(''));
  const rest = path.slice(1);
  for (const variant of [
    `/./${rest}`,
    `/x/../${rest}`,
    `/%2e/${rest}`,
    `/%2E%2E/${rest}`,
    `//${rest}`,
    `${path}/`,
    `${path}//`,
    `${path}/.`,
    `${path};x=1`,
    `${path}?x=1`,
    `${path}#fragment`,
    `${path}%00`,
    `${path}%20`,
  ]) {
    out.add(variant);
  }
  for (const origin of ['http://127.0.0.1', 'http://localhost:80', 'https://ops.internal', 'HTTP://X', 'ftp://h']) {
    out.add(`${origin}${path}`);
  }
  return [...out];
}

/** One request on a fresh connection, its target sent exactly as given. */
function rawGet(port: number, method: string, target: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
    const body = method === 'POST' ? '{}' : '';
    socket.end(
      `${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
        (body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : '') +
        `\r\n${body}`,
    );
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
    gateway = await startGateway({
      UPSTREAM_BASE_URL: sim.baseUrl,
      OPS_PORT: String(opsPort),
      API_KEYS: apiKeysWith(OPERATOR),
      BUDGETS: JSON.stringify([{ clientId: '*', daily: 1000 }]),
    });
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
      // Nor does the main port's 404 point at an ops route, for this path or a mistyped caller path.
      expect(hidden.body.detail).not.toMatch(/\/(docs|metrics|admin|console)\b/);
    }
    const typo = await callGateway(gateway.url, 'GET', '/v1/budgte', { apiKey: TEST_CLIENTS.full.key });
    expect(typo.body.detail).toMatch(/the nearest is \/v1\/budget\.$/);
    expect(typo.body.detail).not.toMatch(/\/(docs|metrics|admin|console)\b/);
    // Not 405 either: another method does not reveal the path exists on the ops port.
    expect((await callGateway(gateway.url, 'POST', '/metrics')).status).toBe(404);
    // Nor a long segment under an ops-only route (the router once measured it before the port).
    const long = 'x'.repeat(150);
    for (const path of [`/console/${long}`, `/console/vendor/${long}`]) {
      for (const method of ['GET', 'POST']) {
        const answer = await callGateway(gateway.url, method, path);
        expect({ path, method, status: answer.status, allow: answer.headers.get('allow') }).toEqual({
          path,
          method,
          status: 404,
          allow: null,
        });
      }
    }
    // And the ops port answers 404, not 405, for a main-port route asked with another method.
    const other = await callGateway(ops, 'GET', '/v1/kyc/shahkar');
    expect({ status: other.status, allow: other.headers.get('allow') }).toEqual({ status: 404, allow: null });
  });

  it('serves GET /admin/budgets on the ops port only (ledger:read), GET /v1/budget on the main port only', async () => {
    const admin = await callGateway(ops, 'GET', '/admin/budgets', { apiKey: OPERATOR.key });
    expect(admin.status).toBe(200);
    expect(admin.body.budgets).toEqual([expect.objectContaining({ clientId: '*' })]);
    const hidden = await callGateway(gateway.url, 'GET', '/admin/budgets', { apiKey: OPERATOR.key });
    expect({ status: hidden.status, code: hidden.body.code }).toEqual({ status: 404, code: 'not_found' });
    expect((await callGateway(gateway.url, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.full.key })).status).toBe(200);
    expect((await callGateway(ops, 'GET', '/v1/budget', { apiKey: TEST_CLIENTS.full.key })).status).toBe(404);
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
    // On the main port /metrics is no route at all (the router's 404, counted as unmatched).
    expect(text).toMatch(
      /vgw_http_request_duration_seconds_count\{route="unmatched",method="GET",status="404"[^}]*\} [1-9]/,
    );
  });

  it('reaches no ops endpoint on the main port, and no API route on the ops port, by any spelling', async () => {
    const mainPort = Number(new URL(gateway.url).port);
    const served: string[] = [];
    for (const path of ['/metrics', '/docs', '/docs-json', '/docs/']) {
      for (const target of spellings(path)) {
        const answer = await rawGet(mainPort, 'GET', target);
        if (answer.status === 200 || /# HELP|"openapi"|swagger/i.test(answer.body))
          served.push(`${target} → ${answer.status}`);
      }
    }
    for (const target of spellings('/v1/kyc/shahkar')) {
      // Without a credential: had an API route been reached, its guard would answer 401.
      const answer = await rawGet(opsPort, 'POST', target);
      if (answer.status !== 404 && answer.status !== 400) served.push(`ops ${target} → ${answer.status}`);
    }
    expect(served).toEqual([]);
  });

  it('closes both ports on shutdown', async () => {
    const port = await freePort();
    const other = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, OPS_PORT: String(port) });
    const mainPort = Number(new URL(other.url).port);
    expect([await accepting(mainPort), await accepting(port)]).toEqual([true, true]);
    await other.close();
    expect([await accepting(mainPort), await accepting(port)]).toEqual([false, false]);
  });

  it('closes both ports on shutdown although connections that never sent a request are open', async () => {
    // A browser (the console) opens spare connections ahead of need; Node's close() waits for
    // them until their timeout, which once held a shutdown for 70 s.
    const port = await freePort();
    const other = await startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, OPS_PORT: String(port) });
    const mainPort = Number(new URL(other.url).port);
    const idle = await Promise.all([mainPort, port].map((p) => connected(p)));
    const closedByServer = idle.map((socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())));
    await other.close();
    await Promise.all(closedByServer);
    expect([await accepting(mainPort), await accepting(port)]).toEqual([false, false]);
  }, 15_000);

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
