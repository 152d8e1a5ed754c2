/**
 * JWKS keys through an identity-provider outage: last good keys used for a bounded time,
 * "cannot check" told apart from "bad token", no fetch storm, one state change reported once.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { SignJWT, exportJWK, generateKeyPair, jwtVerify, type CryptoKey, type JWK } from 'jose';
import { JwksKeySource, JwksUnavailableError, describeFailure, type JwksState } from './jwks-key-source.js';

const MINUTE = 60_000;

describe('JwksKeySource', () => {
  let k1: { privateKey: CryptoKey; publicKey: CryptoKey };
  let k2: { privateKey: CryptoKey; publicKey: CryptoKey };
  let jwk1: JWK;
  let jwk2: JWK;

  beforeAll(async () => {
    k1 = await generateKeyPair('ES256', { extractable: true });
    k2 = await generateKeyPair('ES256', { extractable: true });
    jwk1 = { ...(await exportJWK(k1.publicKey)), kid: 'k1', alg: 'ES256' };
    jwk2 = { ...(await exportJWK(k2.publicKey)), kid: 'k2', alg: 'ES256' };
  });

  /** A fake identity provider and clock: `up` decides whether the JWKS answers. */
  function setup(maxStaleMs = 60 * MINUTE) {
    const idp = { up: true, keys: [] as JWK[], fetches: 0 };
    const clock = { now: 1_000_000 };
    const changes: [JwksState, string][] = [];
    const source = new JwksKeySource(new URL('https://idp.test/jwks'), {
      cacheMs: 10 * MINUTE,
      maxStaleMs,
      retryMs: 5000,
      timeoutMs: 1000,
      cooldownMs: 30_000,
      now: () => clock.now,
      onStateChange: (state, _previous, cause) => changes.push([state, describeFailure(cause)]),
      fetch: () => {
        idp.fetches += 1;
        if (!idp.up) return Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }));
        return Promise.resolve(new Response(JSON.stringify({ keys: idp.keys }), { status: 200 }));
      },
    });
    return { idp, clock, changes, source };
  }

  const token = (key: CryptoKey, kid: string) =>
    new SignJWT({ sub: 'u' }).setProtectedHeader({ alg: 'ES256', kid }).setExpirationTime('1y').sign(key);
  const verify = (source: JwksKeySource, jwt: string) => jwtVerify(jwt, source.getKey).then(() => 'valid');

  it('fetches once, then verifies from memory while the keys are current', async () => {
    const { idp, source, changes } = setup();
    idp.keys = [jwk1];
    const jwt = await token(k1.privateKey, 'k1');
    for (let i = 0; i < 5; i++) await expect(verify(source, jwt)).resolves.toBe('valid');
    expect(idp.fetches).toBe(1);
    expect(changes).toEqual([['ok', 'unknown error']]);
  });

  it('IdP down: keeps the last good keys until maxStale, then "cannot check"; one state change each', async () => {
    const { idp, clock, source, changes } = setup(60 * MINUTE);
    idp.keys = [jwk1];
    const jwt = await token(k1.privateKey, 'k1');
    await verify(source, jwt);

    idp.up = false;
    clock.now += 11 * MINUTE; // past the refresh: a fetch is due and fails
    await expect(verify(source, jwt)).resolves.toBe('valid');
    expect(source.state).toBe('stale');
    // A forged token is still refused as a bad token (401), not as "cannot check".
    await expect(verify(source, await token(k2.privateKey, 'k1'))).rejects.toMatchObject({
      code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
    });
    // An unknown kid cannot be looked up while the IdP is down: "cannot check" (503), not "bad token".
    await expect(verify(source, await token(k2.privateKey, 'k2'))).rejects.toBeInstanceOf(JwksUnavailableError);

    // Requests within the retry interval do not hit the dead IdP again.
    const fetches = idp.fetches;
    for (let i = 0; i < 10; i++) await verify(source, jwt);
    expect(idp.fetches).toBe(fetches);

    clock.now += 50 * MINUTE; // 61 min past the fetch, within 10 + 60
    await expect(verify(source, jwt)).resolves.toBe('valid');
    clock.now += 10 * MINUTE; // beyond 10 + 60: the keys are too old to trust
    await expect(verify(source, jwt)).rejects.toBeInstanceOf(JwksUnavailableError);
    expect(source.state).toBe('unavailable');

    idp.up = true;
    clock.now += 5000;
    await expect(verify(source, jwt)).resolves.toBe('valid');
    expect(changes.map(([state]) => state)).toEqual(['ok', 'stale', 'unavailable', 'ok']);
    expect(changes[1][1]).toBe('TypeError ECONNREFUSED');
  });

  it('IdP down before the first fetch: "cannot check" at once, retried after the interval', async () => {
    const { idp, clock, source, changes } = setup();
    idp.up = false;
    idp.keys = [jwk1];
    const jwt = await token(k1.privateKey, 'k1');
    await expect(verify(source, jwt)).rejects.toBeInstanceOf(JwksUnavailableError);
    await expect(verify(source, jwt)).rejects.toBeInstanceOf(JwksUnavailableError);
    expect(idp.fetches).toBe(1);
    idp.up = true;
    clock.now += 5000;
    await expect(verify(source, jwt)).resolves.toBe('valid');
    expect(changes.map(([state]) => state)).toEqual(['unavailable', 'ok']);
  });

  it('maxStale 0: no stale keys at all once the refresh fails', async () => {
    const { idp, clock, source } = setup(0);
    idp.keys = [jwk1];
    const jwt = await token(k1.privateKey, 'k1');
    await verify(source, jwt);
    idp.up = false;
    clock.now += 10 * MINUTE;
    await expect(verify(source, jwt)).rejects.toBeInstanceOf(JwksUnavailableError);
  });

  it('a rotated-in key is fetched on its first use (once per cooldown); an unknown kid is a bad token', async () => {
    const { idp, clock, source } = setup();
    idp.keys = [jwk1];
    await verify(source, await token(k1.privateKey, 'k1'));
    clock.now += 31_000;
    idp.keys = [jwk1, jwk2];
    await expect(verify(source, await token(k2.privateKey, 'k2'))).resolves.toBe('valid');
    expect(idp.fetches).toBe(2);
    await expect(verify(source, await token(k2.privateKey, 'k3'))).rejects.toMatchObject({
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
    expect(idp.fetches).toBe(2);
  });
});
