import { createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { loadConfig } from '../config/load-config.js';
import { Secret } from '../config/secret.js';
import { sha256 } from './sha256.js';
import { SubjectHasher } from './subject-hash.js';
import { subjectHasherFrom } from '../inquiry/subject-pseudonyms.js';

const raw = (fill: number) => Buffer.alloc(32, fill).toString('base64');
const key = (id: string, fill: number) => ({ id, key: new Secret(raw(fill)) });
/** A `sub` an identity provider might use: a national code, guessable by brute force when hashed plainly. */
const SUB = '0499370899';

describe('SubjectHasher', () => {
  it('is HMAC-SHA-256 of the sub under the first key, not its plain SHA-256', () => {
    const hasher = new SubjectHasher([key('a', 1), key('b', 2)]);
    const expected = createHmac('sha256', Buffer.alloc(32, 1)).update(SUB).digest('hex');
    expect(hasher.hash(SUB)).toBe(expected);
    expect(hasher.hash(SUB)).not.toBe(sha256(SUB));
    expect(hasher.hash(SUB)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('matches a pseudonym made under any key of the ring: a rotation keeps records visible', () => {
    const before = new SubjectHasher([key('a', 1)]);
    const added = new SubjectHasher([key('a', 1), key('b', 2)]);
    const promoted = new SubjectHasher([key('b', 2), key('a', 1)]);
    const old = before.hash(SUB);
    for (const hasher of [before, added, promoted]) expect(hasher.matches(SUB, old)).toBe(true);
    expect(promoted.hash(SUB)).not.toBe(old);
    expect(added.matches(SUB, promoted.hash(SUB))).toBe(true);
    // Once the old key is gone, its pseudonyms no longer match.
    expect(new SubjectHasher([key('b', 2)]).matches(SUB, old)).toBe(false);
  });

  it('matches no other sub, nor a malformed stored value', () => {
    const hasher = new SubjectHasher([key('a', 1)]);
    expect(hasher.matches('0499370898', hasher.hash(SUB))).toBe(false);
    expect(hasher.matches(SUB, undefined)).toBe(false);
    expect(hasher.matches(SUB, hasher.hash(SUB).slice(0, 63))).toBe(false);
    expect(hasher.matches(SUB, hasher.hash(SUB).toUpperCase())).toBe(false);
  });

  it('still matches a record written before keyed hashing (its plain SHA-256)', () => {
    expect(new SubjectHasher([key('a', 1)]).matches(SUB, sha256(SUB))).toBe(true);
  });

  it('derives its keys from the store ring by HKDF, never hashing with a store key itself', () => {
    const derived = new SubjectHasher([], [key('a', 1)]);
    const subjectKey = Buffer.from(
      hkdfSync('sha256', Buffer.alloc(32, 1), '', 'verification-gateway subjectSha256 v1', 32),
    );
    expect(derived.hash(SUB)).toBe(createHmac('sha256', subjectKey).update(SUB).digest('hex'));
    expect(derived.hash(SUB)).not.toBe(new SubjectHasher([key('a', 1)]).hash(SUB));
  });

  it('without a key hashes plainly, as before', () => {
    expect(new SubjectHasher([]).hash(SUB)).toBe(sha256(SUB));
  });

  it('names claims under every key it holds, never plainly once it has one; the plain name is only looked up', () => {
    const derived = new SubjectHasher([], [key('s', 9)]);
    const both = new SubjectHasher([key('a', 1)], [key('s', 9)]);
    // The replica given SUBJECT_HASH_KEYS first still names its claims under the derived key too,
    // the one a replica not yet given it holds (mid-rollout).
    expect(both.claimHashes(SUB)).toEqual([both.hash(SUB), derived.hash(SUB)]);
    expect(both.claimHashes(SUB)).not.toContain(sha256(SUB));
    expect(both.formerHashes(SUB)).toEqual([sha256(SUB)]);
    expect(new SubjectHasher([]).claimHashes(SUB)).toEqual([sha256(SUB)]);
    expect(new SubjectHasher([]).formerHashes(SUB)).toEqual([]);
  });
});

describe('loadConfig: SUBJECT_HASH_KEYS', () => {
  const base = {
    UPSTREAM_BASE_URL: 'https://verify.example.com',
    UPSTREAM_USERNAME: 'u',
    UPSTREAM_PASSWORD: 'p',
    API_KEYS: JSON.stringify([{ clientId: 'a', keySha256: sha256('k'), scopes: ['kyc:shahkar'] }]),
  };

  it('takes its own ring, else the store ring to derive from', () => {
    const own = loadConfig({ ...base, SUBJECT_HASH_KEYS: `s1:${raw(3)}`, STORE_ENCRYPTION_KEYS: `k1:${raw(4)}` });
    expect(own.subjectHash.keys.map((k) => [k.id, k.key.reveal()])).toEqual([['s1', raw(3)]]);
    expect(own.subjectHash.derivedFrom).toMatchObject([{ id: 'k1' }]);
    const derived = loadConfig({ ...base, STORE_ENCRYPTION_KEYS: `k1:${raw(4)}` });
    expect(derived.subjectHash).toMatchObject({ keys: [], derivedFrom: [{ id: 'k1' }] });
  });

  it('moving to SUBJECT_HASH_KEYS keeps the pseudonyms derived from STORE_ENCRYPTION_KEYS matching (compared, never hashed with)', () => {
    const hasher = (env: Record<string, string>) =>
      subjectHasherFrom(new ConfigService<AppConfig, true>(loadConfig({ ...base, ...env })));
    const store = { STORE_ENCRYPTION_KEYS: `k1:${raw(4)}` };
    const derived = hasher(store);
    const own = hasher({ ...store, SUBJECT_HASH_KEYS: `s1:${raw(3)}` });
    const old = derived.hash(SUB);
    expect(own.matches(SUB, old)).toBe(true);
    expect(own.hash(SUB)).toBe(createHmac('sha256', Buffer.alloc(32, 3)).update(SUB).digest('hex'));
    expect(own.matches('0499370898', old)).toBe(false);
    // Once the store key has left its ring, its derived pseudonyms go with it.
    expect(hasher({ STORE_ENCRYPTION_KEYS: `k2:${raw(5)}`, SUBJECT_HASH_KEYS: `s1:${raw(3)}` }).matches(SUB, old)).toBe(
      false,
    );
  });

  it('refuses a malformed ring naming the entry, never the key', () => {
    const secret = 'c2VjcmV0LXN1YmplY3Qta2V5';
    expect(() => loadConfig({ ...base, SUBJECT_HASH_KEYS: `s1:${secret}` })).toThrow(/SUBJECT_HASH_KEYS\[0\]/);
    try {
      loadConfig({ ...base, SUBJECT_HASH_KEYS: `s1:${secret}` });
    } catch (error) {
      expect(String(error)).not.toContain(secret);
    }
  });
});
