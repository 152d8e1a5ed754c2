import { beforeAll, describe, expect, it } from '@jest/globals';
import { Reflector } from '@nestjs/core';
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey, type JWTPayload } from 'jose';
import { ProblemException } from '../problem/problem.js';
import { CallerAuthGuard } from './caller-auth.guard.js';
import { JwtAuthenticator } from './jwt.authenticator.js';

const ISSUER = 'https://idp.example.com';
const AUDIENCE = 'verification-gateway';

let privateKey: CryptoKey;
let authenticator: JwtAuthenticator;
beforeAll(async () => {
  const keys = await generateKeyPair('ES256', { extractable: true });
  privateKey = keys.privateKey;
  const jwt = {
    publicKey: await exportSPKI(keys.publicKey),
    issuer: ISSUER,
    audience: AUDIENCE,
    jwksMaxStaleSeconds: 0,
  };
  authenticator = new JwtAuthenticator({ get: () => ({ jwt }) } as never);
});

function sign(payload: JWTPayload): Promise<string> {
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setExpirationTime('5m')
    .sign(privateKey);
}

/** What the guard answers for a token: the caller's clientId, or the 401's detail. */
async function outcome(payload: JWTPayload): Promise<{ clientId: string } | { status: number; detail: string }> {
  const request: { headers: Record<string, string>; caller?: { clientId: string } } = {
    headers: { authorization: `Bearer ${await sign(payload)}` },
  };
  const context = { switchToHttp: () => ({ getRequest: () => request }), getHandler: () => null, getClass: () => null };
  const reflector = { getAllAndOverride: () => [] } as unknown as Reflector;
  try {
    await new CallerAuthGuard(reflector, [authenticator]).canActivate(context as never);
    return { clientId: request.caller!.clientId };
  } catch (error) {
    if (!(error instanceof ProblemException)) throw error;
    const body = error.toBody() as { detail: string };
    return { status: error.status, detail: body.detail };
  }
}

describe('JwtAuthenticator: ids from claims', () => {
  it('takes azp (or client_id) and sub that are plain ids, non-BMP characters included', async () => {
    expect(await outcome({ azp: 'mobile-app', sub: 'user-1' })).toEqual({ clientId: 'jwt:mobile-app' });
    expect(await outcome({ client_id: 'svc', sub: 'کاربر-😀' })).toEqual({ clientId: 'jwt:svc' });
  });

  // The lone surrogate once passed: PostgreSQL then refused every batch holding its ledger entry.
  it.each([
    ['azp', 'a lone high surrogate', 'app\ud800'],
    ['azp', 'a lone low surrogate', '\udc00app'],
    ['azp', 'a NUL', 'app\u0000'],
    ['azp', 'a C1 control', 'app\u0085'],
    ['azp', 'over 256 characters', 'a'.repeat(257)],
    ['client_id', 'a lone surrogate', 'svc\udbff'],
    ['sub', 'a lone surrogate', 'user\ud83d'],
    ['sub', 'a line feed', 'user\n1'],
  ])('refuses a %s with %s: 401 naming the claim, never its value', async (claim, _what, value) => {
    const payload: JWTPayload = { azp: 'app', sub: 'user-1', [claim]: value };
    if (claim === 'client_id') delete payload.azp;
    const answer = await outcome(payload);
    expect(answer).toEqual({ status: 401, detail: expect.stringContaining(`${claim} claim is not a usable id`) });
    expect((answer as { detail: string }).detail).not.toContain(value);
  });

  it('says which claim is missing', async () => {
    expect(await outcome({ sub: 'u' })).toEqual({ status: 401, detail: 'The token has no azp or client_id claim.' });
    expect(await outcome({ azp: 'a' })).toEqual({ status: 401, detail: 'The token has no sub claim.' });
  });
});
