/**
 * Browsers: CORS_ORIGINS names the web apps that may call the inquiry API from a page
 * (docs/operations.md). Preflights get the request headers an inquiry needs; answers expose the
 * contract's response headers to scripts; any other origin gets no CORS grant at all.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { loadConfig, ConfigError } from '../src/config/load-config.js';
import { SHAHKAR } from './support/fixtures.js';
import { TEST_CLIENTS, startGateway, type RunningGateway } from './support/gateway.js';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';

const ALLOWED = 'https://app.example.com';
const OTHER_ALLOWED = 'http://localhost:5173';

/** A comma-separated header value as a list (`a, b` and `a,b` alike). */
const list = (value: string | null) => (value ?? '').split(',').map((item) => item.trim());

function preflight(gateway: RunningGateway, origin: string) {
  return fetch(`${gateway.url}/v1/kyc/shahkar`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,idempotency-key,x-api-key,authorization',
    },
  });
}

function shahkar(gateway: RunningGateway, origin: string) {
  return fetch(`${gateway.url}/v1/kyc/shahkar`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/json', 'x-api-key': TEST_CLIENTS.full.key },
    body: JSON.stringify(SHAHKAR),
  });
}

describe('CORS for web apps (CORS_ORIGINS)', () => {
  let sim: UpstreamSimulator;
  let gateway: RunningGateway;
  let gatewayWithoutCors: RunningGateway;

  beforeAll(async () => {
    sim = new UpstreamSimulator();
    await sim.start();
    [gateway, gatewayWithoutCors] = await Promise.all([
      startGateway({ UPSTREAM_BASE_URL: sim.baseUrl, CORS_ORIGINS: `${ALLOWED}, ${OTHER_ALLOWED}` }),
      startGateway({ UPSTREAM_BASE_URL: sim.baseUrl }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([gateway.close(), gatewayWithoutCors.close()]);
    await sim.stop();
  });

  it('answers a preflight from an allowed origin with the headers an inquiry needs', async () => {
    for (const origin of [ALLOWED, OTHER_ALLOWED]) {
      const response = await preflight(gateway, origin);
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-methods')).toContain('POST');
      const allowed = list(response.headers.get('access-control-allow-headers')).map((h) => h.toLowerCase());
      expect(allowed).toEqual(
        expect.arrayContaining(['authorization', 'x-api-key', 'idempotency-key', 'content-type', 'cache-control']),
      );
      expect(response.headers.get('vary')).toContain('Origin');
    }
  });

  it('lets the page read X-Track-Id, Idempotent-Replayed, Retry-After, Age and Cache-Status on an actual inquiry', async () => {
    const response = await shahkar(gateway, ALLOWED);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    const exposed = list(response.headers.get('access-control-expose-headers'));
    expect(exposed).toEqual(
      expect.arrayContaining(['X-Track-Id', 'Idempotent-Replayed', 'Retry-After', 'Age', 'Cache-Status']),
    );
    expect(response.headers.get('x-track-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('grants nothing to an origin that is not listed (preflight and request)', async () => {
    const evil = 'https://evil.example.com';
    const answer = await preflight(gateway, evil);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    const response = await shahkar(gateway, evil);
    // Without Access-Control-Allow-Origin the browser lets the page read nothing of the answer
    // (@fastify/cors still lists the exposed headers; they grant nothing on their own).
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('answers a plain OPTIONS (no Origin, so no preflight) 204, not a text/plain 400', async () => {
    const answer = await fetch(`${gateway.url}/v1/kyc/shahkar`, { method: 'OPTIONS' });
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(await answer.text()).toBe('');
  });

  it('is off without CORS_ORIGINS: no grant, and a preflight is not a route', async () => {
    const answer = await preflight(gatewayWithoutCors, ALLOWED);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(answer.status).toBe(404);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    const response = await shahkar(gatewayWithoutCors, ALLOWED);
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it.each(['app.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'ftp://x.example.com', '*'])(
    'refuses CORS_ORIGINS entry %j at startup, naming the variable',
    (entry) => {
      const env = {
        UPSTREAM_BASE_URL: 'http://127.0.0.1:9',
        UPSTREAM_USERNAME: 'u',
        UPSTREAM_PASSWORD: 'p',
        API_KEYS: JSON.stringify([{ clientId: 'c', keySha256: '0'.repeat(64), scopes: [] }]),
        CORS_ORIGINS: `${ALLOWED},${entry}`,
      };
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/CORS_ORIGINS/);
    },
  );
});
