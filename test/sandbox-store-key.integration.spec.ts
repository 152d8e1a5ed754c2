/**
 * The sandbox's throwaway store key (test/sandbox/sandbox-store-key.ts): never over the
 * operator's ring (STORE_ENCRYPTION_KEYS_FILE made `npm run sandbox` exit 78), and kept beside
 * the ledger it seals, made once.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { SANDBOX_STORE_KEY_FILE, sandboxStoreKeys } from './sandbox/sandbox-store-key.js';

const cwd = mkdtempSync(join(tmpdir(), 'vgw-sandbox-key-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('the sandbox store key', () => {
  it("leaves the operator's ring alone, STORE_ENCRYPTION_KEYS or its _FILE", () => {
    expect(sandboxStoreKeys({ STORE_ENCRYPTION_KEYS_FILE: '/run/secrets/keys' }, cwd)).toBeUndefined();
    expect(sandboxStoreKeys({ STORE_ENCRYPTION_KEYS: 'k1:x' }, cwd)).toBeUndefined();
  });

  it('keeps the key beside the ledger (its parent, .data/ by default), made once, readable by its owner only', () => {
    const first = sandboxStoreKeys({}, cwd);
    const file = join(cwd, '.data', SANDBOX_STORE_KEY_FILE);
    expect(first?.keys).toMatch(/^sandbox:[A-Za-z0-9+/]{43}=$/);
    expect(readFileSync(file, 'utf8')).toBe(`${first?.keys}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first?.said).toContain(join('.data', SANDBOX_STORE_KEY_FILE));
    expect(sandboxStoreKeys({}, cwd)?.keys).toBe(first?.keys);
    // With a ledger elsewhere, beside that one.
    const other = sandboxStoreKeys({ LEDGER_DATA_DIR: 'var/ledger' }, cwd);
    expect(readFileSync(join(cwd, 'var', SANDBOX_STORE_KEY_FILE), 'utf8')).toBe(`${other?.keys}\n`);
    expect(other?.keys).not.toBe(first?.keys);
  });

  it('with a ledger in memory keeps its key in memory too (nothing written)', () => {
    const empty = mkdtempSync(join(cwd, 'memory-'));
    const made = sandboxStoreKeys({ LEDGER_DATA_DIR: 'memory://' }, empty);
    expect(made?.keys).toMatch(/^sandbox:/);
    expect(sandboxStoreKeys({ LEDGER_DATA_DIR: 'memory://' }, empty)?.keys).not.toBe(made?.keys);
    expect(() => statSync(join(empty, '.data'))).toThrow();
    // A ledger in a PostgreSQL server outlives the sandbox: its key is kept, in .data/.
    sandboxStoreKeys({ LEDGER_DATA_DIR: 'memory://', LEDGER_DATABASE_URL: 'postgres://db/ledger' }, empty);
    expect(statSync(join(empty, '.data', SANDBOX_STORE_KEY_FILE)).isFile()).toBe(true);
  });
});
