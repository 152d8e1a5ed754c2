import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Reflector } from '@nestjs/core';
import { SignJWT, UnsecuredJWT, exportJWK, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose';
import { consoleOidcConfigFrom, type ConsoleOidcConfig } from '../config/console-oidc-config.js';
import { ProblemException } from '../problem/problem.js';
import { CallerAuthGuard, RequireScopes } from './caller-auth.guard.js';
import type { CallerAuthenticator } from './caller.js';
import { JwtAuthenticator } from './jwt.authenticator.js';
import { OidcDiscovery } from './oidc-discovery.js';
import { OperatorTokenAuthenticator } from './operator-token.authenticator.js';

/**
 * Operators' tokens and apps' JWTs from one identity provider (the hard case: only the audience
 * tells them apart), served over real HTTP: discovery document and JWKS.
 */
const APP_AUDIENCE = 'verification-gateway';
const CONSOLE_AUDIENCE = 'vgw-console-api';
let server: Server;
let issuer: string;
let key: CryptoKey;
let otherKey: CryptoKey;
let settings: ConsoleOidcConfig;
let authenticators: CallerAuthenticator[];

beforeAll(async () => {
  const pair = await generateKeyPair('ES256', { extractable: true });
  key = pair.privateKey;
  otherKey = (await generateKeyPair('ES256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (request.url === '/.well-known/openid-configuration')
      return response.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
        }),
      );
    if (request.url === '/jwks') return response.end(JSON.stringify({ keys: [jwk] }));
    // Another issuer's path serving this one's document: a mix-up the discovery must refuse.
    if (request.url === '/mixup/.well-known/openid-configuration')
      return response.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
        }),
      );
    response.statusCode = 404;
    response.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const problems: string[] = [];
  settings = consoleOidcConfigFrom(
    {
      CONSOLE_OIDC_ISSUER: issuer,
      CONSOLE_OIDC_CLIENT_ID: 'vgw-console',
      CONSOLE_OIDC_AUDIENCE: CONSOLE_AUDIENCE,
      CONSOLE_OIDC_ROLES_CLAIM: 'realm_access.roles',
      CONSOLE_OIDC_ROLE_SCOPES: 'finance=ledger:read,finance=ledger:reconcile,support=ledger:read',
    },
    { issuer, audience: APP_AUDIENCE },
    problems,
  )!;
  expect(problems).toEqual([]);
  const jwt = { jwksUrl: `${issuer}/jwks`, issuer, audience: APP_AUDIENCE, jwksMaxStaleSeconds: 0 };
  authenticators = [
    new OperatorTokenAuthenticator(settings, new OidcDiscovery(issuer), true),
    new JwtAuthenticator({ get: () => ({ jwt }) } as never),
  ];
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function sign(payload: JWTPayload, audience: string, options: { exp?: string | number; signer?: CryptoKey } = {}) {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setExpirationTime(options.exp ?? '5m')
    .sign(options.signer ?? key);
}

class Route {
  @RequireScopes('ledger:read', 'ledger:reconcile')
  reconcile(): void {}
  @RequireScopes('kyc:shahkar')
  inquire(): void {}
}

/** The guard's answer for a token on a route: the caller, or the problem's status and code. */
async function outcome(token: string, handler: 'reconcile' | 'inquire' = 'reconcile') {
  const request: { headers: Record<string, string>; caller?: { credential: string; clientId: string } } = {
    headers: { authorization: `Bearer ${token}` },
  };
  const context = {
    switchToHttp: () => ({ getRequest: () => request }),
    // eslint-disable-next-line @typescript-eslint/unbound-method -- read as metadata, never called
    getHandler: () => Route.prototype[handler],
    getClass: () => Route,
  };
  try {
    await new CallerAuthGuard(new Reflector(), authenticators).canActivate(context as never);
    return { credential: request.caller!.credential, clientId: request.caller!.clientId };
  } catch (error) {
    if (!(error instanceof ProblemException)) throw error;
    return { status: error.status, code: (error.toBody() as { code: string }).code };
  }
}

const FINANCE = { sub: 'op-1', name: 'Parisa Finance', scope: 'openid ledger:read ledger:reconcile' };

describe('OperatorTokenAuthenticator', () => {
  it("takes an operator's access token for the console's audience, with its scopes", async () => {
    expect(await outcome(await sign(FINANCE, CONSOLE_AUDIENCE))).toEqual({
      credential: 'operator',
      clientId: 'operator:op-1',
    });
  });

  it('maps a roles claim to scopes; a role it does not know gives nothing', async () => {
    const finance = await sign({ sub: 'op-2', realm_access: { roles: ['finance'] } }, CONSOLE_AUDIENCE);
    expect(await outcome(finance)).toMatchObject({ credential: 'operator' });
    const support = await sign({ sub: 'op-3', realm_access: { roles: ['support', 'admin'] } }, CONSOLE_AUDIENCE);
    expect(await outcome(support)).toEqual({ status: 403, code: 'forbidden' });
  });

  it("never passes an app's end-user JWT as an operator token, even one claiming ledger scopes", async () => {
    const app = await sign({ ...FINANCE, azp: 'mobile-app' }, APP_AUDIENCE);
    expect(await outcome(app)).toEqual({ status: 403, code: 'forbidden' });
  });

  it("never passes an operator's token as an app's JWT", async () => {
    const operator = await sign({ ...FINANCE, scope: 'kyc:shahkar ledger:read', azp: 'vgw-console' }, CONSOLE_AUDIENCE);
    expect(await outcome(operator, 'inquire')).toEqual({ status: 403, code: 'forbidden' });
  });

  it('refuses an expired token, one for another audience, one signed by another key', async () => {
    expect(await outcome(await sign(FINANCE, CONSOLE_AUDIENCE, { exp: Math.floor(Date.now() / 1000) - 120 }))).toEqual({
      status: 401,
      code: 'unauthenticated',
    });
    // An ID token's audience is the client id: never an access token here.
    expect(await outcome(await sign(FINANCE, 'vgw-console'))).toEqual({ status: 401, code: 'unauthenticated' });
    expect(await outcome(await sign(FINANCE, CONSOLE_AUDIENCE, { signer: otherKey }))).toEqual({
      status: 401,
      code: 'unauthenticated',
    });
  });

  it('refuses an ID token even when its audiences include the console API (nonce, at_hash), unless typed at+jwt', async () => {
    const both = (claims: JWTPayload) =>
      new SignJWT({ ...FINANCE, ...claims, aud: ['vgw-console', CONSOLE_AUDIENCE] })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'JWT' })
        .setIssuer(issuer)
        .setExpirationTime('5m')
        .sign(key);
    const refused = { status: 401, code: 'unauthenticated' };
    expect(await outcome(await both({ nonce: 'n-0S6_WzA2Mj' }))).toEqual(refused);
    expect(await outcome(await both({ at_hash: 'HK6E_P6Dh8Y93mRNtsDB1Q' }))).toEqual(refused);
    expect(await outcome(await both({ c_hash: 'LDktKdoQak3Pk0cnXxCltA' }))).toEqual(refused);
    // An access token of a provider that types it (RFC 9068) is taken whatever else it carries.
    const typed = await new SignJWT({ ...FINANCE, nonce: 'n' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
      .setIssuer(issuer)
      .setAudience(CONSOLE_AUDIENCE)
      .setExpirationTime('5m')
      .sign(key);
    expect(await outcome(typed)).toMatchObject({ credential: 'operator' });
  });

  it('with CONSOLE_OIDC_REQUIRE_AT_JWT=true takes only tokens typed at+jwt', async () => {
    const strict = new OperatorTokenAuthenticator({ ...settings, requireAtJwt: true }, new OidcDiscovery(issuer), true);
    const typed = (typ?: string) =>
      new SignJWT({ ...FINANCE })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', ...(typ ? { typ } : {}) })
        .setIssuer(issuer)
        .setAudience(CONSOLE_AUDIENCE)
        .setExpirationTime('5m')
        .sign(key);
    const headers = async (typ?: string) => ({ authorization: `Bearer ${await typed(typ)}` });
    expect(await strict.authenticate(await headers('at+jwt'))).toMatchObject({ credential: 'operator' });
    expect(await strict.authenticate(await headers('application/at+JWT'))).toMatchObject({ credential: 'operator' });
    expect(await strict.authenticate(await headers('JWT'))).toBeNull();
    expect(await strict.authenticate(await headers())).toBeNull();
    // Off (the default): the same `JWT`-typed token is an operator's.
    expect(settings.requireAtJwt).toBe(false);
    expect(await outcome(await typed('JWT'))).toMatchObject({ credential: 'operator' });
  });

  it('refuses alg none, a shared-secret HS256 token, and tokens without exp, from another issuer or not yet valid', async () => {
    const refused = { status: 401, code: 'unauthenticated' };
    const none = new UnsecuredJWT({ ...FINANCE })
      .setIssuer(issuer)
      .setAudience(CONSOLE_AUDIENCE)
      .setExpirationTime('5m')
      .encode();
    expect(await outcome(none)).toEqual(refused);
    const hs256 = await new SignJWT({ ...FINANCE })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(CONSOLE_AUDIENCE)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('a shared secret anyone with the JWKS could guess'));
    expect(await outcome(hs256)).toEqual(refused);
    const noExp = await new SignJWT({ ...FINANCE })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(CONSOLE_AUDIENCE)
      .sign(key);
    expect(await outcome(noExp)).toEqual(refused);
    const otherIssuer = await new SignJWT({ ...FINANCE })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(`${issuer}/other`)
      .setAudience(CONSOLE_AUDIENCE)
      .setExpirationTime('5m')
      .sign(key);
    // Not addressed to the console by its issuer: the apps' authenticator answers, and grants no ledger scope.
    expect(await outcome(otherIssuer)).toMatchObject({ status: 401 });
    const early = await new SignJWT({ ...FINANCE })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(CONSOLE_AUDIENCE)
      .setNotBefore('10m')
      .setExpirationTime('20m')
      .sign(key);
    expect(await outcome(early)).toEqual(refused);
  });

  it("refuses the console's own ID token without nonce or at_hash (optional in the code flow) when its audiences include the console API, unless typed at+jwt", async () => {
    // A code-flow ID token of a provider that lists the API among its audiences: no nonce (the
    // client sent none, or a refresh grant's), no at_hash (optional from the token endpoint).
    const idToken = (typ: string) =>
      new SignJWT({ ...FINANCE, azp: 'vgw-console', auth_time: Math.floor(Date.now() / 1000) })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ })
        .setIssuer(issuer)
        .setAudience(['vgw-console', CONSOLE_AUDIENCE])
        .setExpirationTime('5m')
        .sign(key);
    expect(await outcome(await idToken('JWT'))).toEqual({ status: 401, code: 'unauthenticated' });
    expect(await outcome(await idToken('at+jwt'))).toMatchObject({ credential: 'operator' });
  });
});

describe('OidcDiscovery', () => {
  it("refuses a document naming another issuer, and a provider that is down: no endpoints, operators' tokens 503", async () => {
    expect(await new OidcDiscovery(`${issuer}/mixup`).current()).toBeUndefined();
    const down = new OidcDiscovery('http://127.0.0.1:9');
    expect(await down.current()).toBeUndefined();
    const operator = new OperatorTokenAuthenticator({ ...settings, issuer: 'http://127.0.0.1:9' }, down, false);
    const token = await sign(FINANCE, CONSOLE_AUDIENCE);
    await expect(operator.authenticate({ authorization: `Bearer ${token}` })).rejects.toMatchObject({
      code: 'auth_unavailable',
    });
  });
});

describe('consoleOidcConfigFrom', () => {
  const base = { CONSOLE_OIDC_ISSUER: 'https://id.example.com', CONSOLE_OIDC_CLIENT_ID: 'vgw-console' };
  const problemsOf = (env: Record<string, string>, appJwt?: { issuer: string; audience: string }) => {
    const problems: string[] = [];
    consoleOidcConfigFrom(env, appJwt, problems);
    return problems;
  };

  it('fails fast, naming the variable, on the settings that would confuse tokens', () => {
    expect(problemsOf(base)).toEqual([expect.stringMatching(/^CONSOLE_OIDC_AUDIENCE: required/)]);
    expect(problemsOf({ ...base, CONSOLE_OIDC_AUDIENCE: 'vgw-console' })).toEqual([
      expect.stringMatching(/^CONSOLE_OIDC_AUDIENCE: must differ from CONSOLE_OIDC_CLIENT_ID/),
    ]);
    expect(
      problemsOf({ ...base, CONSOLE_OIDC_AUDIENCE: 'gw' }, { issuer: 'https://id.example.com/', audience: 'gw' }),
    ).toEqual([expect.stringMatching(/^CONSOLE_OIDC_AUDIENCE: must differ from JWT_AUDIENCE/)]);
  });

  it('refuses a plain-http issuer off localhost and a role mapped to a scope operators cannot hold', () => {
    expect(problemsOf({ ...base, CONSOLE_OIDC_ISSUER: 'http://id.example.com', CONSOLE_OIDC_AUDIENCE: 'a' })).toEqual([
      expect.stringMatching(/^CONSOLE_OIDC_ISSUER: must be an https URL/),
    ]);
    expect(
      problemsOf({
        ...base,
        CONSOLE_OIDC_AUDIENCE: 'a',
        CONSOLE_OIDC_ROLES_CLAIM: 'groups',
        CONSOLE_OIDC_ROLE_SCOPES: 'ops=kyc:shahkar',
      }),
    ).toEqual([expect.stringMatching(/^CONSOLE_OIDC_ROLE_SCOPES: entry 1/)]);
  });
});
