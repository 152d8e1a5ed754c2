import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from './load-config.js';
import { reuseConfigFrom } from './reuse-config.js';

const KEY = 'reuse-hmac-key-0123456789abcdef0123456789';

const read = (env: Record<string, string | undefined>) => {
  const problems: string[] = [];
  const config = reuseConfigFrom(env, ['shahkar', 'iban', 'card-to-iban'], problems);
  return { config, problems };
};

describe('reuse configuration (INQUIRY_REUSE, REUSE_HMAC_KEY)', () => {
  it('reads each operation, share defaulting to subject; unset or 0 means never reused', () => {
    const { config, problems } = read({
      INQUIRY_REUSE: '{"shahkar":{"maxAgeSeconds":86400},"iban":{"maxAgeSeconds":0,"share":"company"}}',
      REUSE_HMAC_KEY: KEY,
    });
    expect(problems).toEqual([]);
    expect(config.operations).toEqual({ shahkar: { maxAgeSeconds: 86400, share: 'subject' } });
    expect(config.hmacKey?.reveal()).toBe(KEY);
    expect(read({}).config).toEqual({ operations: {} });
  });

  it.each([
    ['{', 'INQUIRY_REUSE: is not valid JSON'],
    ['[]', 'INQUIRY_REUSE: must be {"<operation>":{"maxAgeSeconds":n,"share":"subject|client|company"}}'],
    ['{"selfie":{"maxAgeSeconds":1}}', 'INQUIRY_REUSE: unknown operation (only shahkar, iban, card-to-iban)'],
    ['{"iban":{"maxAgeSeconds":1,"ttl":2}}', 'INQUIRY_REUSE.iban: unknown field (only maxAgeSeconds, share)'],
    ['{"iban":{"maxAgeSeconds":-1}}', 'INQUIRY_REUSE.iban.maxAgeSeconds: must be a whole number of seconds, 0 or more'],
    [
      '{"iban":{"maxAgeSeconds":"60"}}',
      'INQUIRY_REUSE.iban.maxAgeSeconds: must be a whole number of seconds, 0 or more',
    ],
    [
      '{"iban":{"maxAgeSeconds":1.5}}',
      'INQUIRY_REUSE.iban.maxAgeSeconds: must be a whole number of seconds, 0 or more',
    ],
    ['{"iban":{"maxAgeSeconds":31536001}}', 'INQUIRY_REUSE.iban.maxAgeSeconds: must be at most 31536000 (a year)'],
    ['{"iban":{"maxAgeSeconds":1,"share":"all"}}', 'INQUIRY_REUSE.iban.share: must be one of subject, client, company'],
    ['{"iban":3}', 'INQUIRY_REUSE.iban: must be an object {maxAgeSeconds, share?}'],
  ])('refuses %s, naming the variable', (raw, problem) => {
    const { config, problems } = read({ INQUIRY_REUSE: raw, REUSE_HMAC_KEY: KEY });
    expect(problems).toEqual([problem]);
    expect(config.operations).toEqual({});
  });

  it('requires a key of 32 bytes or more once an operation is reusable, and never echoes it', () => {
    expect(read({ INQUIRY_REUSE: '{"iban":{"maxAgeSeconds":60}}' }).problems).toEqual([
      'REUSE_HMAC_KEY: is not set (required when INQUIRY_REUSE allows an operation)',
    ]);
    const short = 'short-key-' + 'x'.repeat(21);
    const { problems } = read({ INQUIRY_REUSE: '{"iban":{"maxAgeSeconds":60}}', REUSE_HMAC_KEY: short });
    expect(problems).toEqual(['REUSE_HMAC_KEY: must be at least 32 bytes (openssl rand -base64 32)']);
    // Nothing reusable: no key needed.
    expect(read({ INQUIRY_REUSE: '{"iban":{"maxAgeSeconds":0}}' }).problems).toEqual([]);
  });

  describe('through loadConfig', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vgw-reuse-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const base = {
      UPSTREAM_BASE_URL: 'https://verify.example.com',
      UPSTREAM_USERNAME: 'u',
      UPSTREAM_PASSWORD: 'p',
      API_KEYS: JSON.stringify([
        { clientId: 'app', keySha256: createHash('sha256').update('k').digest('hex'), scopes: ['kyc:iban'] },
      ]),
    };

    it('reads both from files (INQUIRY_REUSE_FILE, REUSE_HMAC_KEY_FILE); the key prints as [secret]', () => {
      writeFileSync(join(dir, 'reuse.json'), '{"iban":{"maxAgeSeconds":604800,"share":"company"}}\n');
      writeFileSync(join(dir, 'key'), `${KEY}\n`);
      const config = loadConfig({
        ...base,
        INQUIRY_REUSE_FILE: join(dir, 'reuse.json'),
        REUSE_HMAC_KEY_FILE: join(dir, 'key'),
      });
      expect(config.reuse.operations).toEqual({ iban: { maxAgeSeconds: 604800, share: 'company' } });
      expect(config.reuse.hmacKey?.reveal()).toBe(KEY);
      expect(inspect(config.reuse)).not.toContain(KEY);
      expect(JSON.stringify(config.reuse)).not.toContain(KEY);
    });

    it('fails at start naming the variable, never the key', () => {
      let error: unknown;
      try {
        loadConfig({ ...base, INQUIRY_REUSE: '{"iban":{"maxAgeSeconds":60}}', REUSE_HMAC_KEY: 'tiny-secret-key' });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([
        'REUSE_HMAC_KEY: must be at least 32 bytes (openssl rand -base64 32)',
      ]);
      expect((error as Error).message).not.toContain('tiny-secret-key');
    });
  });
});
