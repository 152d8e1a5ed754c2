import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig, StoreEncryptionKey } from '../config/app-config.js';

/** Marks a sealed value: `enc:v1:<key id>:<base64 of iv | ciphertext | tag>`. */
export const SEALED_PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** IVs are drawn from a pool of random bytes: one randomBytes call per 256 seals (measured: bench/store-cipher.ts). */
const IV_POOL_BYTES = IV_BYTES * 256;

/** A stored value that cannot be opened: unknown key id (removed too early), or altered. */
export class StoreCipherError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreCipherError';
  }
}

/**
 * Encryption at rest for what the Redis stores write (docs/decisions/0004-encryption-at-rest.md):
 * AES-256-GCM under a key ring from STORE_ENCRYPTION_KEYS. The first key seals, every key opens,
 * so keys rotate with data live. Each value is bound to where it is stored (the Redis key name,
 * and the field for hashes) as additional authenticated data: a sealed value copied to another
 * key — another client's record, say — does not open.
 *
 * Without keys, values are written in clear (a warning at startup) and the ledger keeps no
 * upstream results (LedgerStore.insert: sealed or not kept). Values
 * written in clear (before encryption was turned on) are still read, so it can be turned on with
 * data live; they expire with their TTL.
 */
export class StoreCipher {
  private readonly logger = new Logger('StoreCipher');
  /**
   * KeyObjects, not Buffers: on Node 24 createCipheriv with a Buffer key builds a key object per
   * call, 18 µs a seal instead of 8.5 (`npm run bench:cipher`, docs/performance.md).
   */
  private readonly ring = new Map<string, KeyObject>();
  private readonly sealing?: { id: string; key: KeyObject };
  private readonly reported = new Set<string>();
  private ivPool = Buffer.alloc(0);
  private ivOffset = 0;

  /** `keys`: the ring, the sealing key first (STORE_ENCRYPTION_KEYS); empty: values in clear. */
  constructor(keys: readonly StoreEncryptionKey[]) {
    for (const { id, key } of keys) this.ring.set(id, createSecretKey(Buffer.from(key.reveal(), 'base64')));
    if (keys.length > 0) this.sealing = { id: keys[0].id, key: this.ring.get(keys[0].id)! };
  }

  /**
   * The application's cipher, from its configuration (store.module.ts). Without keys, said once
   * at start in every store mode: the ledger then keeps no upstream results (issue 33: sealed or
   * not kept), and with Redis what it stores is in clear.
   */
  static fromConfig(config: ConfigService<AppConfig, true>): StoreCipher {
    const { keys } = config.get('storeEncryption', { infer: true });
    if (keys.length === 0) {
      const redis = config.get('store', { infer: true }).mode !== 'memory';
      new Logger('StoreCipher').warn(
        'STORE_ENCRYPTION_KEYS unset: the ledger keeps no upstream results (its entries only; GET /v1/inquiries ' +
          'answers without data once the record has expired)' +
          (redis ? '; tokens, inquiry records and replayable answers are stored in Redis in clear' : ''),
      );
    }
    return new StoreCipher(keys);
  }

  get enabled(): boolean {
    return this.sealing !== undefined;
  }

  /** Seals `plain` for storage under `context` (the Redis key name, plus the field for a hash). */
  seal(plain: string, context: string): string {
    if (!this.sealing) return plain;
    const iv = this.nextIv();
    const cipher = createCipheriv('aes-256-gcm', this.sealing.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([iv, cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${SEALED_PREFIX}${this.sealing.id}:${sealed.toString('base64')}`;
  }

  /** A random 96-bit IV (NIST SP 800-38D: random IVs, well under 2^32 seals per key between rotations). */
  private nextIv(): Buffer {
    if (this.ivOffset + IV_BYTES > this.ivPool.length) {
      this.ivPool = randomBytes(IV_POOL_BYTES);
      this.ivOffset = 0;
    }
    const iv = this.ivPool.subarray(this.ivOffset, this.ivOffset + IV_BYTES);
    this.ivOffset += IV_BYTES;
    return iv;
  }

  /** Opens a value `seal` wrote under the same context; a value stored in clear is returned as is. */
  open(stored: string, context: string): string {
    return this.unseal(stored, context, true)!;
  }

  /**
   * As open, for a caller that answers without the value when it cannot be opened (the
   * ledger's results): undefined then, and nothing logged here, where the caller says what it
   * does instead (an error logged here says the request is refused).
   */
  openOrUndefined(stored: string, context: string): string | undefined {
    return this.unseal(stored, context, false);
  }

  private unseal(stored: string, context: string, refuse: boolean): string | undefined {
    if (!stored.startsWith(SEALED_PREFIX)) return stored;
    const separator = stored.indexOf(':', SEALED_PREFIX.length);
    const id = stored.slice(SEALED_PREFIX.length, separator);
    const key = this.ring.get(id);
    if (separator < 0 || !key) {
      if (!refuse) return undefined;
      throw this.failure(`a stored value is sealed with key id "${id}", not in the key ring`);
    }
    const sealed = Buffer.from(stored.slice(separator + 1), 'base64');
    if (sealed.length < IV_BYTES + TAG_BYTES) {
      if (!refuse) return undefined;
      throw this.failure('a stored value is truncated');
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      if (!refuse) return undefined;
      throw this.failure(`a stored value sealed with key id "${id}" fails authentication (altered or moved)`);
    }
  }

  /** Logged once per kind: a removed key or tampering shows in the logs without flooding them. */
  private failure(message: string): StoreCipherError {
    if (!this.reported.has(message)) {
      this.reported.add(message);
      this.logger.error(`${message}; the request is refused as store_unavailable`);
    }
    return new StoreCipherError(message);
  }
}
