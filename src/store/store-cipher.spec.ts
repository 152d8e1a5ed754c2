/** AES-256-GCM key ring: round trip, fresh IVs, binding to the storage place, rotation, tampering. */
import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Secret } from '../config/secret.js';
import { SEALED_PREFIX, StoreCipher, StoreCipherError } from './store-cipher.js';

const key = (id: string) => ({ id, key: new Secret(randomBytes(32).toString('base64')) });
const K1 = key('k1');
const K2 = key('k2');
const PLAIN = JSON.stringify({ data: { owner: 'Ali Rezaei' } });

describe('StoreCipher', () => {
  // Refusals are logged at error level; here they are expected, so they are asserted, not printed.
  const silenceErrors = () => jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  let logged: ReturnType<typeof silenceErrors>;
  beforeEach(() => {
    logged = silenceErrors();
  });
  afterEach(() => logged.mockRestore());

  it('seals with the first key and opens under the same context', () => {
    const cipher = new StoreCipher([K1, K2]);
    const sealed = cipher.seal(PLAIN, 'ctx');
    expect(sealed.startsWith(`${SEALED_PREFIX}k1:`)).toBe(true);
    expect(sealed).not.toContain('Ali');
    expect(cipher.open(sealed, 'ctx')).toBe(PLAIN);
  });

  it('uses a fresh IV every time: the same value never seals the same way', () => {
    const cipher = new StoreCipher([K1]);
    expect(cipher.seal(PLAIN, 'ctx')).not.toBe(cipher.seal(PLAIN, 'ctx'));
  });

  it('a value sealed under one context does not open under another', () => {
    const cipher = new StoreCipher([K1]);
    expect(() => cipher.open(cipher.seal(PLAIN, '{vgw:inq:a}'), '{vgw:inq:b}')).toThrow(StoreCipherError);
  });

  it('rotation: a ring with the new key first opens what the old key sealed; a ring without it does not', () => {
    const old = new StoreCipher([K1]);
    const rotated = new StoreCipher([K2, K1]);
    const sealedOld = old.seal(PLAIN, 'ctx');
    expect(rotated.open(sealedOld, 'ctx')).toBe(PLAIN);
    expect(rotated.seal(PLAIN, 'ctx').startsWith(`${SEALED_PREFIX}k2:`)).toBe(true);
    expect(() => new StoreCipher([K2]).open(sealedOld, 'ctx')).toThrow(/key id "k1", not in the key ring/);
  });

  it('an altered or truncated value fails authentication', () => {
    const cipher = new StoreCipher([K1]);
    const sealed = cipher.seal(PLAIN, 'ctx');
    const body = Buffer.from(sealed.slice(`${SEALED_PREFIX}k1:`.length), 'base64');
    body[20] ^= 1;
    expect(() => cipher.open(`${SEALED_PREFIX}k1:${body.toString('base64')}`, 'ctx')).toThrow(StoreCipherError);
    expect(() => cipher.open(`${SEALED_PREFIX}k1:AAAA`, 'ctx')).toThrow(/truncated/);
    // Once per kind, naming the key id and never the value.
    expect(() => cipher.open(`${SEALED_PREFIX}k1:AAAA`, 'ctx')).toThrow(/truncated/);
    expect(logged.mock.calls).toEqual([
      [
        'a stored value sealed with key id "k1" fails authentication (altered or moved); the request is refused as store_unavailable',
      ],
      ['a stored value is truncated; the request is refused as store_unavailable'],
    ]);
  });

  it('without keys it writes in clear; values written in clear are read with or without keys', () => {
    const off = new StoreCipher([]);
    expect(off.enabled).toBe(false);
    expect(off.seal(PLAIN, 'ctx')).toBe(PLAIN);
    expect(new StoreCipher([K1]).open(PLAIN, 'ctx')).toBe(PLAIN);
    expect(() => off.open(new StoreCipher([K1]).seal(PLAIN, 'ctx'), 'ctx')).toThrow(StoreCipherError);
  });
});
