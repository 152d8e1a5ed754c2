import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TEST_CLIENTS, startGateway, type RunningGateway } from './support/gateway.js';

describe('gateway skeleton', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    // An upstream address nothing listens on: liveness must not depend on it.
    gateway = await startGateway({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9', UPSTREAM_TIMEOUT_MS: '500' });
  });
  afterAll(() => gateway.close());

  it('answers /health/live without Redis or upstream', async () => {
    const response = await fetch(`${gateway.url}/health/live`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'ok' });
  });

  it('answers an unknown route with problem+json not_found', async () => {
    const response = await fetch(`${gateway.url}/nope`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toContain('application/problem+json');
    expect(await response.json()).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('serves Prometheus metrics', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('vgw_upstream_call_duration_seconds');
  });
});

describe('prototype poisoning', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway({ UPSTREAM_BASE_URL: 'http://127.0.0.1:9', UPSTREAM_TIMEOUT_MS: '500' });
  });
  afterAll(() => gateway.close());

  it.each([
    '{"__proto__":{"admin":true},"nationalCode":"0499370899","mobileNumber":"09121234567"}',
    '{"constructor":{"prototype":{"admin":true}},"nationalCode":"0499370899","mobileNumber":"09121234567"}',
  ])('refuses %s with 400 validation_failed', async (body) => {
    const response = await fetch(`${gateway.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_CLIENTS.full.key },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'validation_failed', errors: [{ field: 'body' }] });
  });
});
