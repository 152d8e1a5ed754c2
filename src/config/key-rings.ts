import type { StoreEncryptionKey } from './app-config.js';
import type { EnvironmentVariables } from './environment.js';
import { Secret } from './secret.js';

/**
 * The end users' pseudonym keys (crypto/subject-hash.ts): SUBJECT_HASH_KEYS, else derived from
 * STORE_ENCRYPTION_KEYS. With both, the derived keys still compare: the records hashed before
 * SUBJECT_HASH_KEYS was set stay visible to their users. Neither: optional as encryption at
 * rest is (decision 0004, the contract's environment keeps working), warned at start when JWT
 * callers are configured.
 */
export function subjectHashConfig(vars: EnvironmentVariables, storeKeys: StoreEncryptionKey[], problems: string[]) {
  return { keys: parseEncryptionKeys('SUBJECT_HASH_KEYS', vars.SUBJECT_HASH_KEYS, problems), derivedFrom: storeKeys };
}

/**
 * A key ring (STORE_ENCRYPTION_KEYS, SUBJECT_HASH_KEYS): `id:key[,id:key…]`, keys of 32 bytes in
 * base64 (`openssl rand -base64 32`). Problems name the entry by position, never a key.
 */
export function parseEncryptionKeys(name: string, raw: string | undefined, problems: string[]): StoreEncryptionKey[] {
  if (raw === undefined) return [];
  const keys: StoreEncryptionKey[] = [];
  raw.split(',').forEach((entry, index) => {
    const where = `${name}[${index}]`;
    const at = entry.indexOf(':');
    const id = entry.slice(0, Math.max(at, 0)).trim();
    const key = entry.slice(at + 1).trim();
    if (at < 0 || !/^[A-Za-z0-9_-]{1,16}$/.test(id)) {
      problems.push(`${where}: must be id:key with an id of 1-16 of A-Z a-z 0-9 _ -`);
    } else if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key) || Buffer.from(key, 'base64').length !== 32) {
      problems.push(`${where}: the key must be 32 bytes in base64 (openssl rand -base64 32)`);
    } else if (keys.some((k) => k.id === id)) {
      problems.push(`${where}: the key id is used twice`);
    } else {
      keys.push({ id, key: new Secret(key) });
    }
  });
  return keys;
}
