/**
 * JWT callers (docs/api.md §1): signature by public key or JWKS URL, iss/aud/exp/nbf,
 * scopes from `scope` or `scp`, client from `azp` or `client_id`.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose';
import { UpstreamSimulator } from './upstream-simulator/upstream-simulator.js';
import { TEST_CLIENTS, startGateway, type RunningGateway } from './support/gateway.js';

const ISSUER = 'https://id.example.test';
const AUDIENCE = 'verification-gateway';
const BODY = JSON.stringify({ nationalCode: '0499370899', mobileNumber: '09121234567' });

describe('JWT callers', () => {
  let sim: UpstreamSimulator;
  let keys: { privateKey: CryptoKey; publicKey: CryptoKey };
  let otherKeys: { privateKey: CryptoKey; publicKey: CryptoKey };
  let byPublicKey: RunningGateway;
  let byJwks: RunningGateway;
  let jwks: Server;
  let jwksUp = true;
  let deadJwks: Server;
  let byDeadJwks: RunningGateway;

  function sign(
    payload: JWTPayload,
    options: { key?: CryptoKey; exp?: string | number; nbf?: string | number; iss?: string; aud?: string } = {},
  ) {
    const jwt = new SignJWT(payload)
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setIssuedAt()
      .setIssuer(options.iss ?? ISSUER)
      .setAudience(options.aud ?? AUDIENCE)
      .setExpirationTime(options.exp ?? '5m');
    if (options.nbf !== undefined) jwt.setNotBefore(options.nbf);
    return jwt.sign(options.key ?? keys.privateKey);
  }

  const call = (gateway: RunningGateway, token: string, path = '/v1/kyc/shahkar', body = BODY) =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });

  beforeAll(async () => {
    keys = await generateKeyPair('RS256', { extractable: true });
    otherKeys = await generateKeyPair('RS256', { extractable: true });
    sim = new UpstreamSimulator();
    await sim.start();
    const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    jwks = createServer((_req, res) => {
      if (!jwksUp) return res.writeHead(503).end();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    }).listen(0, '127.0.0.1');
    await once(jwks, 'listening');
    // An identity provider that is down from the start: its connections are dropped unanswered.
    deadJwks = createServer((req) => req.socket.destroy()).listen(0, '127.0.0.1');
    await once(deadJwks, 'listening');
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`;
    const common = { UPSTREAM_BASE_URL: sim.baseUrl, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };
    byPublicKey = await startGateway({ ...common, JWT_PUBLIC_KEY: await exportSPKI(keys.publicKey) });
    byJwks = await startGateway({ ...common, JWT_JWKS_URL: jwksUrl });
    byDeadJwks = await startGateway({
      ...common,
      JWT_JWKS_URL: `http://127.0.0.1:${(deadJwks.address() as { port: number }).port}/jwks.json`,
    });
  });

  afterAll(async () => {
    await byPublicKey.close();
    await byJwks.close();
    await byDeadJwks.close();
    jwks.close();
    deadJwks.close();
    await sim.stop();
  });

  it.each([
    ['public key', () => byPublicKey],
    ['JWKS URL', () => byJwks],
  ])('accepts a valid token verified by %s, with scopes from `scope`', async (_name, gateway) => {
    const response = await call(
      gateway(),
      await sign({ azp: 'mobile-app', sub: 'user-1', scope: 'kyc:shahkar inquiries:read' }),
    );
    expect(response.status).toBe(200);
    const { trackId } = (await response.json()) as { trackId: string };
    const read = async (claims: JWTPayload) =>
      (
        await fetch(`${gateway().url}/v1/inquiries/${trackId}`, {
          headers: { authorization: `Bearer ${await sign(claims)}` },
        })
      ).status;
    // The record belongs to the end user of the JWT's client: readable with a new token of the same user…
    expect(await read({ azp: 'mobile-app', sub: 'user-1', scope: 'inquiries:read' })).toBe(200);
    // …not by another user of the same app, nor by another client.
    expect(await read({ azp: 'mobile-app', sub: 'user-2', scope: 'inquiries:read' })).toBe(404);
    expect(await read({ azp: 'web-app', sub: 'user-1', scope: 'inquiries:read' })).toBe(404);
    // A token of the same app without an end user is refused outright, not treated as the whole app.
    expect(await read({ azp: 'mobile-app', scope: 'inquiries:read' })).toBe(401);
    expect(await read({ azp: 'mobile-app', sub: '', scope: 'inquiries:read' })).toBe(401);
  });

  it('a JWT client never passes for an API-key client of the same name', async () => {
    const byService = await fetch(`${byPublicKey.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'x-api-key': TEST_CLIENTS.full.key, 'content-type': 'application/json' },
      body: BODY,
    });
    const { trackId } = (await byService.json()) as { trackId: string };
    const impostor = await sign({ azp: TEST_CLIENTS.full.clientId, sub: 'u', scope: 'inquiries:read' });
    const response = await fetch(`${byPublicKey.url}/v1/inquiries/${trackId}`, {
      headers: { authorization: `Bearer ${impostor}` },
    });
    expect(response.status).toBe(404);
  });

  it('Idempotency-Keys are per end user: two users of one app, same key, two inquiries', async () => {
    const before = sim.inquiryCalls;
    const withKey = async (sub: string) =>
      fetch(`${byPublicKey.url}/v1/kyc/shahkar`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await sign({ azp: 'mobile-app', sub, scope: 'kyc:shahkar' })}`,
          'content-type': 'application/json',
          'idempotency-key': 'same-key',
        },
        body: BODY,
      });
    const [a, b] = [await withKey('user-a'), await withKey('user-b')];
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.headers.get('x-track-id')).not.toBe(b.headers.get('x-track-id'));
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(sim.inquiryCalls).toBe(before + 2);
  });

  it('takes scopes from `scp` and the client from `client_id`', async () => {
    const response = await call(
      byPublicKey,
      await sign({ client_id: 'svc', sub: 'user-9', scp: ['kyc:iban'] }),
      '/v1/kyc/iban',
      JSON.stringify({ iban: 'IR820540102680020817909002' }),
    );
    expect(response.status).toBe(200);
  });

  it.each([
    ['a foreign signature', () => sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }, { key: otherKeys.privateKey })],
    [
      'an expired token',
      () => sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }, { exp: Math.floor(Date.now() / 1000) - 120 }),
    ],
    [
      'a token not valid before later',
      () => sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }, { nbf: Math.floor(Date.now() / 1000) + 600 }),
    ],
    ['a wrong issuer', () => sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }, { iss: 'https://evil.test' })],
    ['a wrong audience', () => sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }, { aud: 'someone-else' })],
    ['no client id', () => sign({ sub: 'u', scope: 'kyc:shahkar' })],
    [
      'an unsigned token',
      () =>
        Promise.resolve(
          `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ azp: 'a', sub: 'u', scope: 'kyc:shahkar', iss: ISSUER, aud: AUDIENCE, exp: 9999999999 })).toString('base64url')}.`,
        ),
    ],
    ['garbage', () => Promise.resolve('not-a-jwt')],
    // The end user must be known (fail closed): otherwise the token would act for all of its app's users.
    ['no sub', () => sign({ azp: 'a', scope: 'kyc:shahkar' })],
    ['a numeric sub', () => sign({ azp: 'a', sub: 42 as unknown as string, scope: 'kyc:shahkar' })],
    ['an object sub', () => sign({ azp: 'a', sub: { id: 'u' } as unknown as string, scope: 'kyc:shahkar' })],
    ['an empty sub', () => sign({ azp: 'a', sub: '', scope: 'kyc:shahkar' })],
    ['an over-long sub', () => sign({ azp: 'a', sub: 'u'.repeat(257), scope: 'kyc:shahkar' })],
    ['a sub with a control character', () => sign({ azp: 'a', sub: 'user\u0000', scope: 'kyc:shahkar' })],
    // PostgreSQL refuses a lone surrogate in text: its ledger entry once stopped every batch.
    ['an azp with a lone surrogate', () => sign({ azp: 'a\ud800', sub: 'u', scope: 'kyc:shahkar' })],
    ['a sub with a lone surrogate', () => sign({ azp: 'a', sub: '\udc00u', scope: 'kyc:shahkar' })],
  ])('rejects %s with 401 unauthenticated', async (_name, token) => {
    const before = sim.inquiryCalls;
    const response = await call(byPublicKey, await token());
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'unauthenticated' });
    // RFC 9110 §11.6.1 and RFC 6750 §3.1: the scheme the caller tried, and why it failed.
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="verification-gateway", error="invalid_token"');
    expect(sim.inquiryCalls).toBe(before);
  });

  it('an API key sent as a bearer token: 401 saying API keys go in X-Api-Key; a bad JWT gets no such hint', async () => {
    const hint = 'An API key goes in the X-Api-Key header, not in Authorization: Bearer.';
    const asBearer = await call(byPublicKey, TEST_CLIENTS.full.key);
    expect([asBearer.status, ((await asBearer.json()) as { detail: string }).detail]).toEqual([
      401,
      `The credential is not valid. ${hint}`,
    ]);
    const badJwt = await call(byPublicKey, 'abc.def.ghi');
    expect(((await badJwt.json()) as { detail: string }).detail).not.toContain('X-Api-Key');
  });

  it('offers both schemes in WWW-Authenticate when no credential is sent', async () => {
    const response = await fetch(`${byPublicKey.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      'ApiKey realm="verification-gateway", header="X-Api-Key", Bearer realm="verification-gateway"',
    );
  });

  it('a valid token without the scope gets 403 forbidden; advanced needs kyc:advanced', async () => {
    expect((await call(byPublicKey, await sign({ azp: 'a', sub: 'u', scope: 'kyc:iban' }))).status).toBe(403);
    const advanced = JSON.stringify({
      nationalCode: '0499370899',
      mobileNumber: '09121234567',
      requestHandlingType: 'advanced',
    });
    expect(
      (await call(byPublicKey, await sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }), '/v1/kyc/shahkar', advanced))
        .status,
    ).toBe(403);
    expect(
      (
        await call(
          byPublicKey,
          await sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar kyc:advanced' }),
          '/v1/kyc/shahkar',
          advanced,
        )
      ).status,
    ).toBe(200);
  });

  it('identity provider unreachable with no keys: 503 auth_unavailable with Retry-After, not 401', async () => {
    const before = sim.inquiryCalls;
    const response = await call(byDeadJwks, await sign({ azp: 'a', sub: 'u', scope: 'kyc:shahkar' }));
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toMatchObject({ status: 503, code: 'auth_unavailable' });
    expect(sim.inquiryCalls).toBe(before);
    // A token that is bad on its face (no JWT at all) is still 401: no key is needed to tell.
    expect((await call(byDeadJwks, 'not-a-jwt')).status).toBe(401);
    const metrics = await (await fetch(`${byDeadJwks.url}/metrics`)).text();
    expect(metrics).toMatch(/^vgw_jwks_state\{state="unavailable"\} 1$/m);
    expect(metrics).toMatch(/^vgw_jwt_auth_unavailable_total 1$/m);
  });

  it('identity provider going down after a fetch: the cached keys keep verifying tokens', async () => {
    const token = await sign({ azp: 'mobile-app', sub: 'user-1', scope: 'kyc:shahkar' });
    expect((await call(byJwks, token)).status).toBe(200);
    jwksUp = false;
    try {
      expect((await call(byJwks, await sign({ azp: 'mobile-app', sub: 'user-2', scope: 'kyc:shahkar' }))).status).toBe(
        200,
      );
    } finally {
      jwksUp = true;
    }
    const metrics = await (await fetch(`${byJwks.url}/metrics`)).text();
    expect(metrics).toMatch(/^vgw_jwks_state\{state="ok"\} 1$/m);
  });

  it('API keys keep working beside JWT', async () => {
    const response = await fetch(`${byPublicKey.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: { 'x-api-key': TEST_CLIENTS.full.key, 'content-type': 'application/json' },
      body: BODY,
    });
    expect(response.status).toBe(200);
  });
});
