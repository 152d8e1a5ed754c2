import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { sha256 } from './sha256.js';

/** A key of a ring (config's StoreEncryptionKey has this shape): base64 bytes behind reveal(). */
export interface SubjectKey {
  key: { reveal(): string };
}

/** HKDF's `info` for a subject key derived from a store key: the two never share a key. */
const DERIVED_INFO = 'verification-gateway subjectSha256 v1';

/**
 * An end user's pseudonym (`subjectSha256`, docs/api.md §6): HMAC-SHA-256 of the JWT `sub` under
 * a key of the gateway, hex. A plain SHA-256 of a national code or a mobile, as some identity
 * providers use for `sub`, is reversed by brute force in minutes (issue 33); without the key it
 * is not. A key ring, as for encryption at rest: the first key hashes new records, every key is
 * tried when comparing, so a user still sees its records after a rotation. The keys derived
 * from the store ring hash only without SUBJECT_HASH_KEYS; with it they still compare, so
 * setting it later hides no one's records. A value written before keyed hashing (the plain
 * SHA-256) still matches its user: records live in the ledger for years, and compare, never
 * reverse.
 */
export class SubjectHasher {
  /** The hashing key first, then every key that only compares. */
  private readonly ring: KeyObject[];

  /**
   * `keys`: SUBJECT_HASH_KEYS, the hashing key first; `derivedFrom`: store keys, each turned
   * into its own key (HKDF), hashing with the first only when `keys` is empty.
   */
  constructor(keys: readonly SubjectKey[], derivedFrom: readonly SubjectKey[] = []) {
    const bytes = ({ key }: SubjectKey) => Buffer.from(key.reveal(), 'base64');
    this.ring = [
      ...keys.map((key) => createSecretKey(bytes(key))),
      ...derivedFrom.map((key) => createSecretKey(Buffer.from(hkdfSync('sha256', bytes(key), '', DERIVED_INFO, 32)))),
    ];
  }

  /** The pseudonym new records carry; without a key, the plain SHA-256 (warned at start). */
  hash(subject: string): string {
    return this.ring.length === 0 ? sha256(subject) : this.hmac(this.ring[0], subject);
  }

  /**
   * This subject's pseudonym under every key of the ring, the hashing key's first, each once;
   * without a key, its plain SHA-256 alone. Names derived from a subject (Idempotency-Key claims)
   * are made under every one of them: a replica that holds only some of these keys (mid-rollout
   * of a rotation, or of SUBJECT_HASH_KEYS set for the first time) still finds the claim.
   */
  claimHashes(subject: string): string[] {
    if (this.ring.length === 0) return [sha256(subject)];
    return [...new Set(this.ring.map((key) => this.hmac(key, subject)))];
  }

  /**
   * The plain SHA-256 names of builds before keyed names, or of replicas without a key: looked up,
   * never written by a replica that has a key (a name anyone can recompute from a `sub`).
   */
  formerHashes(subject: string): string[] {
    return this.ring.length === 0 ? [] : [sha256(subject)];
  }

  /** True when `stored` is this subject's pseudonym under any key of the ring, or its plain SHA-256. */
  matches(subject: string, stored: string | undefined): boolean {
    if (stored === undefined || !/^[0-9a-f]{64}$/.test(stored)) return false;
    const expected = Buffer.from(stored, 'hex');
    // Every pseudonym this subject has had: those of the ring's keys and the plain one before them.
    const candidates = [...this.claimHashes(subject), ...this.formerHashes(subject)];
    return candidates.some((candidate) => timingSafeEqual(Buffer.from(candidate, 'hex'), expected));
  }

  private hmac(key: KeyObject, subject: string): string {
    return createHmac('sha256', key).update(subject, 'utf8').digest('hex');
  }
}
