/**
 * Configuration loading (docs/api.md §5): defaults, every bad variable named at once,
 * `*_FILE` variants, Redis modes, API keys and JWT, and secrets that are never echoed.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from '@jest/globals';
import { createGateway } from '../bootstrap.js';
import { ConfigError, loadConfig } from './load-config.js';
import { Secret } from './secret.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const PEM = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
  type: 'spki',
  format: 'pem',
}) as string;

const USERNAME = 'cfg-user-7f3a9c';
const PASSWORD = 'cfg-pass-Qw9!x2#zz';
const HASH_A = sha256('key-a');
const HASH_B = sha256('key-b');
const API_KEYS = JSON.stringify([{ clientId: 'app-a', keySha256: HASH_A, scopes: ['kyc:shahkar', 'inquiries:read'] }]);

const MINIMAL: Record<string, string> = {
  UPSTREAM_BASE_URL: 'https://verify.example.com',
  UPSTREAM_USERNAME: USERNAME,
  UPSTREAM_PASSWORD: PASSWORD,
  API_KEYS,
};

/** The ConfigError thrown by `loadConfig(env)`; fails the test when nothing is thrown. */
function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('loadConfig did not throw');
}

/** The variable names a ConfigError lists (the part of each problem before the colon). */
const namesIn = (error: ConfigError): string[] => error.problems.map((p) => p.split(':')[0]);

const tmp = mkdtempSync(join(tmpdir(), 'vgw-config-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let fileCount = 0;
function tempFile(content: string): string {
  const path = join(tmp, `f${++fileCount}`);
  writeFileSync(path, content);
  return path;
}

describe('loadConfig: a valid minimal environment', () => {
  it('yields a typed configuration with the documented defaults', () => {
    const config = loadConfig(MINIMAL);
    expect(config.http.port).toBe(3000);
    expect(config.http.bodyLimitBytes).toBe(16 * 1024);
    expect(config.http.requestTimeoutMs).toBe(15_000);
    expect(config.http.keepAliveTimeoutMs).toBe(75_000);
    expect(config.upstream.baseUrl).toBe('https://verify.example.com');
    expect(config.upstream.timeoutMs).toBe(10_000);
    expect(config.token.refreshSkewSeconds).toBe(300);
    expect(config.store).toEqual({ mode: 'memory', keyPrefix: 'vgw' });
    expect(config.idempotency.ttlSeconds).toBe(86_400);
    expect(config.logging.level).toBe('info');
    expect(config.callers.apiKeys).toEqual([
      { clientId: 'app-a', keySha256: HASH_A, scopes: ['kyc:shahkar', 'inquiries:read'] },
    ]);
    expect(config.callers.jwt).toBeUndefined();
    expect(config.budgets).toEqual({ entries: [], timeZone: 'UTC', calendar: 'gregory' });
    expect(config.inquiryPrices.shahkar).toEqual({ standard: 1, advanced: 3 });
  });

  it('reads BUDGETS_FILE and keeps its path for reloads; a bad BUDGET_CALENDAR is named', () => {
    const path = tempFile('[{"clientId":"*","daily":50}]\n');
    const config = loadConfig({ ...MINIMAL, BUDGETS_FILE: path, BUDGET_TIMEZONE: 'Asia/Tehran' });
    expect(config.budgets).toEqual({
      entries: [{ clientId: '*', daily: 50 }],
      timeZone: 'Asia/Tehran',
      calendar: 'gregory',
      file: path,
    });
    expect(namesIn(configError({ ...MINIMAL, BUDGET_CALENDAR: 'julian', BUDGETS: '[1]' }))).toEqual([
      'BUDGET_CALENDAR',
      'BUDGETS[0]',
    ]);
  });

  it('holds the upstream credentials as Secrets that reveal the configured values', () => {
    const { upstream } = loadConfig(MINIMAL);
    expect(upstream.username).toBeInstanceOf(Secret);
    expect(upstream.password).toBeInstanceOf(Secret);
    expect(upstream.username.reveal()).toBe(USERNAME);
    expect(upstream.password.reveal()).toBe(PASSWORD);
  });

  it('never exposes a credential when the whole configuration is serialised', () => {
    const config = loadConfig(MINIMAL);
    for (const text of [
      JSON.stringify(config),
      inspect(config, { depth: 10 }),
      `${String(config.upstream.password)}`,
    ]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(USERNAME);
    }
  });

  it('converts numeric variables and honours explicit values', () => {
    const config = loadConfig({
      ...MINIMAL,
      PORT: '8080',
      UPSTREAM_TIMEOUT_MS: '2500',
      TOKEN_REFRESH_SKEW_SECONDS: '60',
      REDIS_KEY_PREFIX: 'gw-1',
      IDEMPOTENCY_TTL_SECONDS: '3600',
      LOG_LEVEL: 'debug',
      UPSTREAM_BASE_URL: 'http://upstream.internal:8080/',
    });
    expect(config.http.port).toBe(8080);
    expect(config.upstream.timeoutMs).toBe(2500);
    expect(config.token.refreshSkewSeconds).toBe(60);
    expect(config.store.keyPrefix).toBe('gw-1');
    expect(config.idempotency.ttlSeconds).toBe(3600);
    expect(config.logging.level).toBe('debug');
    // A trailing slash is dropped: paths /api/v5/... are appended.
    expect(config.upstream.baseUrl).toBe('http://upstream.internal:8080');
  });

  it('treats empty values as unset', () => {
    const config = loadConfig({ ...MINIMAL, PORT: '', REDIS_URL: '', LOG_LEVEL: '' });
    expect(config.http.port).toBe(3000);
    expect(config.store.mode).toBe('memory');
    expect(config.logging.level).toBe('info');
  });
});

describe('loadConfig: every problem named by variable, in one error', () => {
  it('lists every missing required variable at once', () => {
    const error = configError({});
    expect(error.name).toBe('ConfigError');
    expect(namesIn(error)).toEqual(
      expect.arrayContaining(['UPSTREAM_BASE_URL', 'UPSTREAM_USERNAME', 'UPSTREAM_PASSWORD', 'API_KEYS']),
    );
    for (const name of ['UPSTREAM_BASE_URL', 'UPSTREAM_USERNAME', 'UPSTREAM_PASSWORD'])
      expect(error.message).toContain(name);
  });

  it('lists several malformed variables in one ConfigError', () => {
    const error = configError({
      ...MINIMAL,
      PORT: 'eighty',
      UPSTREAM_BASE_URL: 'not a url',
      UPSTREAM_TIMEOUT_MS: '5',
      TOKEN_REFRESH_SKEW_SECONDS: '-1',
      REDIS_URL: 'http://redis:6379',
      REDIS_KEY_PREFIX: 'has spaces in it',
      IDEMPOTENCY_TTL_SECONDS: '1.5',
      LOG_LEVEL: 'loud',
    });
    const expected = [
      'PORT',
      'UPSTREAM_BASE_URL',
      'UPSTREAM_TIMEOUT_MS',
      'TOKEN_REFRESH_SKEW_SECONDS',
      'REDIS_URL',
      'REDIS_KEY_PREFIX',
      'IDEMPOTENCY_TTL_SECONDS',
      'LOG_LEVEL',
    ];
    expect(namesIn(error)).toEqual(expect.arrayContaining(expected));
    for (const name of expected) expect(error.message).toContain(name);
    // Nothing else was wrong.
    expect(namesIn(error).every((name) => expected.includes(name))).toBe(true);
  });

  it.each([
    ['PORT', '65536'],
    ['PORT', '3000abc'],
    ['UPSTREAM_BASE_URL', 'ftp://verify.example.com'],
    ['UPSTREAM_BASE_URL', 'verify.example.com'],
    ['UPSTREAM_TIMEOUT_MS', '300001'],
    ['TOKEN_REFRESH_SKEW_SECONDS', 'soon'],
    ['IDEMPOTENCY_TTL_SECONDS', '59'],
    ['LOG_LEVEL', 'INFO!'],
    ['REDIS_KEY_PREFIX', 'x'.repeat(33)],
    ['JWT_JWKS_URL', 'not-a-url'],
  ])('%s=%j is rejected, naming %s', (name, value) => {
    const error = configError({ ...MINIMAL, [name]: value });
    expect(namesIn(error)).toContain(name);
  });
});

describe('loadConfig: one message per variable, saying what is wrong and what is expected', () => {
  it('says a required variable "is not set", and points to .env.example', () => {
    const error = configError({ API_KEYS });
    expect(error.problems).toEqual([
      'UPSTREAM_BASE_URL: is not set (required: it must be an http:// or https:// URL such as https://verify.example.com)',
      'UPSTREAM_USERNAME: is not set (it is required)',
      'UPSTREAM_PASSWORD: is not set (it is required)',
    ]);
    expect(error.message).toMatch(/\.env\.example/);
  });

  it('counts an empty value (as copied from .env.example) as not set; an empty secret file "is empty"', () => {
    const error = configError({
      ...MINIMAL,
      UPSTREAM_USERNAME: '',
      UPSTREAM_PASSWORD: undefined,
      UPSTREAM_PASSWORD_FILE: tempFile(''),
    });
    expect(error.problems).toEqual([
      'UPSTREAM_USERNAME: is not set (it is required)',
      'UPSTREAM_PASSWORD: is empty (a value is required)',
    ]);
  });

  it.each([
    ['UPSTREAM_TIMEOUT_MS', '10s', 'must be a whole number of milliseconds between 100 and 300000'],
    ['UPSTREAM_TIMEOUT_MS', '5', 'must be a whole number of milliseconds between 100 and 300000'],
    ['IDEMPOTENCY_TTL_SECONDS', '1.5', 'must be a whole number of seconds between 60 and 2592000'],
    ['BODY_LIMIT_BYTES', '16k', 'must be a whole number of bytes between 1024 and 1048576'],
    ['PORT', 'eighty', 'must be a whole number between 0 and 65535'],
    ['LOG_LEVEL', 'loud', 'must be one of fatal, error, warn, info, debug, trace, silent'],
    ['REDIS_URL', 'http://redis:6379', 'must be a redis:// or rediss:// URL'],
  ])('%s=%j: one message, "%s"', (name, value, message) => {
    expect(configError({ ...MINIMAL, [name]: value }).problems).toEqual([`${name}: ${message}`]);
  });
});

describe('loadConfig: IDEMPOTENCY_TTL_SECONDS outlives every inquiry', () => {
  it('refuses a TTL shorter than the in-flight lease or the longest deadline, naming both values', () => {
    // Defaults: lease 10 × 10 s + 30 s = 130 s; advanced deadline 2 × 30 s + 4 × 10 s + 2 s + 2 s = 104 s.
    const lease = configError({ ...MINIMAL, IDEMPOTENCY_TTL_SECONDS: '120' });
    expect(lease.message).toContain(
      'IDEMPOTENCY_TTL_SECONDS: 120 is shorter than an inquiry can hold its key and record (130 s with UPSTREAM_TIMEOUT_MS=10000 and UPSTREAM_ADVANCED_TIMEOUT_MS=30000)',
    );
    const deadline = configError({
      ...MINIMAL,
      IDEMPOTENCY_TTL_SECONDS: '200',
      UPSTREAM_TIMEOUT_MS: '1000',
      UPSTREAM_ADVANCED_TIMEOUT_MS: '120000',
    });
    expect(deadline.message).toContain('(248 s with UPSTREAM_TIMEOUT_MS=1000 and UPSTREAM_ADVANCED_TIMEOUT_MS=120000)');
    expect(loadConfig({ ...MINIMAL, IDEMPOTENCY_TTL_SECONDS: '130' }).idempotency.ttlSeconds).toBe(130);
  });
});

describe('loadConfig: secrets are never echoed in errors', () => {
  const SECRET_PASSWORD = 'pw-SENTINEL-9d8c7b';
  const SECRET_USERNAME = 'user-SENTINEL-1a2b3c';
  const SECRET_PUBLIC_KEY = '-----BEGIN PUBLIC KEY-----\nPK-SENTINEL-5e6f7a\n-----END PUBLIC KEY-----';

  const expectNoSecretIn = (error: ConfigError, secrets: string[]) => {
    const texts = [
      error.message,
      String(error),
      inspect(error),
      JSON.stringify(error),
      error.problems.join('\n'),
      error.stack ?? '',
    ];
    for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
  };

  it('with valid secrets beside other bad variables', () => {
    const error = configError({
      UPSTREAM_BASE_URL: 'nope',
      UPSTREAM_USERNAME: SECRET_USERNAME,
      UPSTREAM_PASSWORD: SECRET_PASSWORD,
      API_KEYS: '[{"clientId":"ok","keySha256":"SENTINEL-not-hex","scopes":["kyc:shahkar"]}]',
      JWT_PUBLIC_KEY: SECRET_PUBLIC_KEY,
    });
    expect(namesIn(error)).toEqual(
      expect.arrayContaining(['UPSTREAM_BASE_URL', 'API_KEYS[0].keySha256', 'JWT_ISSUER', 'JWT_AUDIENCE']),
    );
    expectNoSecretIn(error, [SECRET_USERNAME, SECRET_PASSWORD, 'SENTINEL-not-hex', 'PK-SENTINEL-5e6f7a']);
  });

  it('when API_KEYS itself is invalid JSON or the wrong shape', () => {
    for (const raw of [
      '{"clientId": "SENTINEL-broken',
      '"SENTINEL-string"',
      '[{"clientId":"SENTINEL-id!!","keySha256":"x","scopes":"SENTINEL-scope"}]',
    ]) {
      const error = configError({ ...MINIMAL, API_KEYS: raw });
      expect(namesIn(error).some((name) => name.startsWith('API_KEYS'))).toBe(true);
      expectNoSecretIn(error, ['SENTINEL', raw]);
    }
  });

  it('when the secret values themselves are invalid (empty after a file, too long, wrong type)', () => {
    // A username read from a file that holds only a newline is empty: invalid, still not echoed.
    const error = configError({
      ...MINIMAL,
      UPSTREAM_USERNAME: undefined,
      UPSTREAM_USERNAME_FILE: tempFile('\n'),
      UPSTREAM_PASSWORD: SECRET_PASSWORD,
      JWT_PUBLIC_KEY: SECRET_PUBLIC_KEY,
      JWT_JWKS_URL: 'https://idp.example.com/jwks',
    });
    expect(namesIn(error)).toEqual(
      expect.arrayContaining(['UPSTREAM_USERNAME', 'JWT_JWKS_URL', 'JWT_ISSUER', 'JWT_AUDIENCE']),
    );
    expectNoSecretIn(error, [SECRET_PASSWORD, 'PK-SENTINEL-5e6f7a']);
  });

  it('when a secret is set twice (plain and _FILE)', () => {
    const error = configError({
      ...MINIMAL,
      UPSTREAM_PASSWORD: SECRET_PASSWORD,
      UPSTREAM_PASSWORD_FILE: tempFile('pw-FROM-FILE-SENTINEL\n'),
    });
    expect(namesIn(error)).toContain('UPSTREAM_PASSWORD');
    expectNoSecretIn(error, [SECRET_PASSWORD, 'pw-FROM-FILE-SENTINEL']);
  });
});

describe('loadConfig: *_FILE variants', () => {
  it('reads UPSTREAM_USERNAME_FILE, UPSTREAM_PASSWORD_FILE and API_KEYS_FILE, stripping one trailing newline', () => {
    const config = loadConfig({
      UPSTREAM_BASE_URL: 'https://verify.example.com',
      UPSTREAM_USERNAME_FILE: tempFile(`${USERNAME}\n`),
      UPSTREAM_PASSWORD_FILE: tempFile(`${PASSWORD}\r\n`),
      API_KEYS_FILE: tempFile(`${API_KEYS}\n`),
    });
    expect(config.upstream.username.reveal()).toBe(USERNAME);
    expect(config.upstream.password.reveal()).toBe(PASSWORD);
    expect(config.callers.apiKeys).toHaveLength(1);
    expect(config.callers.apiKeys[0].clientId).toBe('app-a');
  });

  it('keeps a file without a trailing newline as it is, and inner spaces of a password', () => {
    const config = loadConfig({
      ...MINIMAL,
      UPSTREAM_PASSWORD: undefined,
      UPSTREAM_PASSWORD_FILE: tempFile(' pass with spaces '),
    });
    expect(config.upstream.password.reveal()).toBe(' pass with spaces ');
  });

  it.each(['UPSTREAM_USERNAME', 'UPSTREAM_PASSWORD', 'API_KEYS'])(
    '%s and %s_FILE together → error naming it',
    (name) => {
      const file = tempFile(name === 'API_KEYS' ? API_KEYS : 'from-file');
      const error = configError({ ...MINIMAL, [`${name}_FILE`]: file });
      expect(namesIn(error)).toContain(name);
      expect(error.message).toContain(`${name}_FILE`);
    },
  );

  it.each(['UPSTREAM_USERNAME', 'UPSTREAM_PASSWORD', 'API_KEYS'])(
    'an unreadable %s_FILE → that one error, not also the variable as unset',
    (name) => {
      const error = configError({
        ...MINIMAL,
        [name]: undefined,
        [`${name}_FILE`]: join(tmp, 'does-not-exist', 'secret'),
      });
      expect(error.problems).toEqual([`${name}_FILE: cannot read the file it names`]);
    },
  );

  it('a directory, or a file without read permission, is unreadable too', () => {
    const dirError = configError({ ...MINIMAL, UPSTREAM_PASSWORD: undefined, UPSTREAM_PASSWORD_FILE: tmp });
    expect(namesIn(dirError)).toContain('UPSTREAM_PASSWORD_FILE');

    const locked = tempFile('secret');
    chmodSync(locked, 0o000);
    // root reads any file regardless of mode: the check only means something otherwise.
    if (process.getuid?.() !== 0) {
      const error = configError({ ...MINIMAL, UPSTREAM_PASSWORD: undefined, UPSTREAM_PASSWORD_FILE: locked });
      expect(namesIn(error)).toContain('UPSTREAM_PASSWORD_FILE');
    }
  });

  it('reports several unreadable files at once', () => {
    const missing = join(tmp, 'missing');
    const error = configError({
      UPSTREAM_BASE_URL: 'https://verify.example.com',
      UPSTREAM_USERNAME_FILE: missing,
      UPSTREAM_PASSWORD_FILE: missing,
      API_KEYS_FILE: missing,
    });
    expect(namesIn(error)).toEqual(
      expect.arrayContaining(['UPSTREAM_USERNAME_FILE', 'UPSTREAM_PASSWORD_FILE', 'API_KEYS_FILE']),
    );
  });
});

describe('loadConfig: Redis store modes', () => {
  it('REDIS_URL=redis://redis:6379 → standalone, no credentials, no TLS', () => {
    expect(loadConfig({ ...MINIMAL, REDIS_URL: 'redis://redis:6379', REDIS_KEY_PREFIX: 'p' }).store).toEqual({
      mode: 'standalone',
      keyPrefix: 'p',
      url: 'redis://redis:6379',
      auth: {},
    });
  });

  it('credentials in REDIS_URL are taken out of the URL (decoded); rediss:// turns TLS on', () => {
    const store = loadConfig({ ...MINIMAL, REDIS_URL: 'rediss://app:p%40ss@redis.example.com:6380/2' }).store;
    expect(store).toMatchObject({ mode: 'standalone', url: 'rediss://redis.example.com:6380/2', tls: {} });
    if (store.mode !== 'standalone') throw new Error('not standalone');
    expect(store.auth.username).toBe('app');
    expect(store.auth.password?.reveal()).toBe('p@ss');
    expect(inspect(store)).not.toContain('p@ss');
  });

  it('REDIS_USERNAME, REDIS_PASSWORD_FILE, REDIS_SENTINEL_PASSWORD_FILE and the TLS files are read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'vgw-redis-cfg-'));
    try {
      writeFileSync(join(dir, 'pw'), 'data-pass\n');
      writeFileSync(join(dir, 'spw'), 'sentinel-pass\n');
      writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
      writeFileSync(join(dir, 'tls.crt'), 'CERT PEM');
      writeFileSync(join(dir, 'tls.key'), 'KEY PEM');
      const store = loadConfig({
        ...MINIMAL,
        REDIS_SENTINELS: 's1:26379',
        REDIS_SENTINEL_NAME: 'm',
        REDIS_USERNAME: 'app',
        REDIS_PASSWORD_FILE: join(dir, 'pw'),
        REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'spw'),
        REDIS_TLS: 'true',
        REDIS_TLS_CA_FILE: join(dir, 'ca.crt'),
        REDIS_TLS_CERT_FILE: join(dir, 'tls.crt'),
        REDIS_TLS_KEY_FILE: join(dir, 'tls.key'),
      }).store;
      if (store.mode !== 'sentinel') throw new Error('not sentinel');
      expect(store.auth.username).toBe('app');
      expect(store.auth.password?.reveal()).toBe('data-pass');
      expect(store.sentinelAuth.password?.reveal()).toBe('sentinel-pass');
      expect(store.tls).toMatchObject({ ca: 'CA PEM', cert: 'CERT PEM' });
      expect(store.tls?.key?.reveal()).toBe('KEY PEM');
      expect(inspect(store)).not.toMatch(/data-pass|sentinel-pass|KEY PEM/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [{ REDIS_URL: 'redis://:a@r:6379', REDIS_PASSWORD: 'b' }, 'REDIS_PASSWORD'],
    [{ REDIS_PASSWORD: 'b' }, 'REDIS_PASSWORD'],
    [{ REDIS_URL: 'redis://r:6379', REDIS_TLS_CA_FILE: '/ca.crt' }, 'REDIS_TLS_CA_FILE'],
    [{ REDIS_URL: 'rediss://r:6379', REDIS_TLS: 'false' }, 'REDIS_TLS'],
    [{ REDIS_URL: 'redis://r:6379', REDIS_TLS: 'yes' }, 'REDIS_TLS'],
    [{ REDIS_URL: 'rediss://r:6379', REDIS_TLS_CERT_FILE: '/tls.crt' }, 'REDIS_TLS_CERT_FILE'],
    [{ REDIS_URL: 'rediss://r:6379', REDIS_TLS_CA_FILE: '/nonexistent/ca.crt' }, 'REDIS_TLS_CA_FILE'],
    [{ REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_PASSWORD: 's' }, 'REDIS_SENTINEL_PASSWORD'],
  ])('Redis credentials and TLS mistakes are refused, naming the variable (%j)', (redis, name) => {
    const error = configError({ ...MINIMAL, ...redis });
    expect(namesIn(error)).toContain(name);
    expect(error.message).not.toMatch(/:a@|\bb\b|\bs\b/);
  });

  it('LEDGER_DRAIN=false needs Redis, any of its three modes: an in-process queue is drained by its own process only', () => {
    const apart = { ...MINIMAL, LEDGER_DATABASE_URL: 'postgres://db/ledger', LEDGER_DRAIN: 'false' };
    expect(configError(apart).problems).toContain(
      'LEDGER_DRAIN: false needs Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES): an in-process queue is drained by its own process only',
    );
    expect(loadConfig({ ...apart, REDIS_URL: 'redis://r:6379' }).ledger.drain).toBe(false);
    expect(loadConfig({ ...apart, REDIS_CLUSTER_NODES: 'r1:6379,r2:6379' }).ledger.drain).toBe(false);
    expect(loadConfig({ ...apart, REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'm' }).ledger.drain).toBe(false);
  });

  it.each(['http://redis:6379', 'redis:6379', 'redis://'])('REDIS_URL=%s is rejected', (url) => {
    expect(namesIn(configError({ ...MINIMAL, REDIS_URL: url }))).toContain('REDIS_URL');
  });

  it('REDIS_SENTINELS with REDIS_SENTINEL_NAME → sentinel mode with parsed hosts (IPv6 too)', () => {
    const config = loadConfig({
      ...MINIMAL,
      REDIS_SENTINELS: 's1:26379,10.0.0.2:26380,[::1]:26381',
      REDIS_SENTINEL_NAME: 'mymaster',
    });
    expect(config.store).toEqual({
      mode: 'sentinel',
      keyPrefix: 'vgw',
      name: 'mymaster',
      auth: {},
      sentinelAuth: {},
      sentinels: [
        { host: 's1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
    });
  });

  it('REDIS_SENTINELS without REDIS_SENTINEL_NAME → error naming REDIS_SENTINEL_NAME', () => {
    const error = configError({ ...MINIMAL, REDIS_SENTINELS: 's1:26379,s2:26379' });
    expect(namesIn(error)).toContain('REDIS_SENTINEL_NAME');
  });

  it('REDIS_CLUSTER_NODES → cluster mode', () => {
    const config = loadConfig({ ...MINIMAL, REDIS_CLUSTER_NODES: 'n1:7000,n2:7001,n3:7002' });
    expect(config.store).toEqual({
      mode: 'cluster',
      keyPrefix: 'vgw',
      auth: {},
      nodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
        { host: 'n3', port: 7002 },
      ],
    });
  });

  it.each(['n1', 'n1:7000,', 'n1:7000;n2:7001', 'n1:port', ',n1:7000'])(
    'malformed host list %j is rejected',
    (list) => {
      expect(namesIn(configError({ ...MINIMAL, REDIS_CLUSTER_NODES: list }))).toContain('REDIS_CLUSTER_NODES');
      expect(namesIn(configError({ ...MINIMAL, REDIS_SENTINELS: list, REDIS_SENTINEL_NAME: 'm' }))).toContain(
        'REDIS_SENTINELS',
      );
    },
  );

  it.each([
    [{ REDIS_URL: 'redis://r:6379', REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm' }],
    [{ REDIS_URL: 'redis://r:6379', REDIS_CLUSTER_NODES: 'n:7000' }],
    [{ REDIS_SENTINELS: 's:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: 'n:7000' }],
    [
      {
        REDIS_URL: 'redis://r:6379',
        REDIS_SENTINELS: 's:26379',
        REDIS_SENTINEL_NAME: 'm',
        REDIS_CLUSTER_NODES: 'n:7000',
      },
    ],
  ])('more than one Redis mode at once is rejected (%j)', (redis) => {
    const error = configError({ ...MINIMAL, ...redis });
    expect(error.problems.some((p) => /set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES/.test(p))).toBe(
      true,
    );
    expect(namesIn(error).some((name) => ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'].includes(name))).toBe(
      true,
    );
  });
});

describe('loadConfig: API_KEYS', () => {
  const entry = (over: Record<string, unknown> = {}) => ({
    clientId: 'app-a',
    keySha256: HASH_A,
    scopes: ['kyc:iban'],
    ...over,
  });
  const keysError = (value: unknown) =>
    configError({ ...MINIMAL, API_KEYS: typeof value === 'string' ? value : JSON.stringify(value) });

  it('accepts several entries, lower-cases hashes and de-duplicates scopes', () => {
    const config = loadConfig({
      ...MINIMAL,
      API_KEYS: JSON.stringify([
        entry({ keySha256: HASH_A.toUpperCase(), scopes: ['kyc:iban', 'kyc:iban', 'kyc:advanced'] }),
        entry({ clientId: 'app-b', keySha256: HASH_B, scopes: [] }),
      ]),
    });
    expect(config.callers.apiKeys).toEqual([
      { clientId: 'app-a', keySha256: HASH_A, scopes: ['kyc:iban', 'kyc:advanced'] },
      { clientId: 'app-b', keySha256: HASH_B, scopes: [] },
    ]);
  });

  it('malformed JSON → API_KEYS', () => {
    const error = keysError('[{"clientId": ');
    expect(error.problems).toEqual(['API_KEYS: is not valid JSON']);
  });

  it.each([[{}], ['"a string"'], ['42'], ['null']])('not an array (%j) → API_KEYS', (value) => {
    expect(namesIn(keysError(value))).toContain('API_KEYS');
  });

  it.each([
    ['not an object', ['entry'], 'API_KEYS[0]'],
    ['null entry', [null], 'API_KEYS[0]'],
    ['missing clientId', [entry({ clientId: undefined })], 'API_KEYS[0].clientId'],
    ['bad clientId', [entry({ clientId: 'has space' })], 'API_KEYS[0].clientId'],
    ['numeric clientId', [entry({ clientId: 7 })], 'API_KEYS[0].clientId'],
    ['missing hash', [entry({ keySha256: undefined })], 'API_KEYS[0].keySha256'],
    ['hash too short', [entry({ keySha256: HASH_A.slice(1) })], 'API_KEYS[0].keySha256'],
    ['hash not hex', [entry({ keySha256: 'g'.repeat(64) })], 'API_KEYS[0].keySha256'],
    ['scopes not an array', [entry({ scopes: 'kyc:iban' })], 'API_KEYS[0].scopes'],
    ['unknown scope', [entry({ scopes: ['kyc:iban', 'kyc:everything'] })], 'API_KEYS[0].scopes'],
    [
      'second entry bad',
      [entry(), entry({ clientId: 'b', keySha256: HASH_B, scopes: ['admin'] })],
      'API_KEYS[1].scopes',
    ],
  ])('%s → %s', (_label, value, name) => {
    expect(namesIn(keysError(value))).toContain(name);
  });

  it('the same hash twice (in any case) → error on the second entry', () => {
    const error = keysError([entry(), entry({ clientId: 'app-b', keySha256: HASH_A.toUpperCase() })]);
    expect(namesIn(error)).toEqual(['API_KEYS[1].keySha256']);
    expect(error.message).toMatch(/twice/);
  });

  it('lists the problems of several entries at once', () => {
    const error = keysError([entry({ clientId: '' }), entry({ clientId: 'b', keySha256: 'x', scopes: ['nope'] })]);
    expect(namesIn(error)).toEqual(
      expect.arrayContaining(['API_KEYS[0].clientId', 'API_KEYS[1].keySha256', 'API_KEYS[1].scopes']),
    );
  });
});

describe('loadConfig: quotas and the circuit breaker', () => {
  it('defaults: 60 inquiries per minute per end user, no client quota, circuit reset 10 s', () => {
    const config = loadConfig(MINIMAL);
    expect(config.callers.userQuotaPerMinute).toBe(60);
    expect(config.callers.apiKeys[0].quotaPerMinute).toBeUndefined();
    expect(config.upstream.circuitResetMs).toBe(10_000);
  });

  it('reads a client quota from its API key entry', () => {
    const keys = JSON.stringify([
      { clientId: 'app-a', keySha256: HASH_A, scopes: ['kyc:shahkar'], quotaPerMinute: 120 },
    ]);
    expect(loadConfig({ ...MINIMAL, API_KEYS: keys }).callers.apiKeys[0].quotaPerMinute).toBe(120);
  });

  it.each([0, -1, 1.5, '10', 2_000_000])('rejects quotaPerMinute %p by its place in API_KEYS', (quota) => {
    const keys = JSON.stringify([
      { clientId: 'app-a', keySha256: HASH_A, scopes: ['kyc:shahkar'], quotaPerMinute: quota },
    ]);
    expect(namesIn(configError({ ...MINIMAL, API_KEYS: keys }))).toEqual(['API_KEYS[0].quotaPerMinute']);
  });

  it('rejects a bad USER_QUOTA_PER_MINUTE and UPSTREAM_CIRCUIT_RESET_MS by name', () => {
    expect(
      namesIn(configError({ ...MINIMAL, USER_QUOTA_PER_MINUTE: '-1', UPSTREAM_CIRCUIT_RESET_MS: 'soon' })).sort(),
    ).toEqual(['UPSTREAM_CIRCUIT_RESET_MS', 'USER_QUOTA_PER_MINUTE']);
  });
});

describe('loadConfig: callers must be configurable', () => {
  const base = {
    UPSTREAM_BASE_URL: 'https://verify.example.com',
    UPSTREAM_USERNAME: USERNAME,
    UPSTREAM_PASSWORD: PASSWORD,
  };

  it('neither API keys nor JWT → error', () => {
    const error = configError(base);
    expect(error.problems).toHaveLength(1);
    expect(error.message).toMatch(/API_KEYS/);
    expect(error.message).toMatch(/JWT/);
  });

  it('an empty API_KEYS array and no JWT → error', () => {
    expect(namesIn(configError({ ...base, API_KEYS: '[]' }))).toContain('API_KEYS');
  });

  it('JWT alone (JWKS URL, issuer, audience) is enough', () => {
    const config = loadConfig({
      ...base,
      JWT_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      JWT_ISSUER: 'https://idp.example.com/',
      JWT_AUDIENCE: 'vgw',
    });
    expect(config.callers.apiKeys).toEqual([]);
    expect(config.callers.jwt).toEqual({
      jwksUrl: 'https://idp.example.com/.well-known/jwks.json',
      publicKey: undefined,
      issuer: 'https://idp.example.com/',
      audience: 'vgw',
      jwksMaxStaleSeconds: 3600,
    });
  });

  it('JWT with a public key is enough too', () => {
    const config = loadConfig({ ...base, JWT_PUBLIC_KEY: PEM, JWT_ISSUER: 'iss', JWT_AUDIENCE: 'aud' });
    expect(config.callers.jwt).toMatchObject({ publicKey: PEM, issuer: 'iss', audience: 'aud' });
  });

  it('JWT without issuer and audience → both named', () => {
    const error = configError({ ...base, JWT_JWKS_URL: 'https://idp.example.com/jwks' });
    expect(namesIn(error)).toEqual(expect.arrayContaining(['JWT_ISSUER', 'JWT_AUDIENCE']));
  });

  it.each(['JWT_ISSUER', 'JWT_AUDIENCE'])('JWT without %s → error naming it', (missing) => {
    const env: Record<string, string> = { ...MINIMAL, JWT_PUBLIC_KEY: PEM, JWT_ISSUER: 'iss', JWT_AUDIENCE: 'aud' };
    delete env[missing];
    expect(namesIn(configError(env))).toEqual([missing]);
  });

  it('both JWT_JWKS_URL and JWT_PUBLIC_KEY → error', () => {
    const error = configError({
      ...MINIMAL,
      JWT_JWKS_URL: 'https://idp/jwks',
      JWT_PUBLIC_KEY: PEM,
      JWT_ISSUER: 'i',
      JWT_AUDIENCE: 'a',
    });
    expect(namesIn(error)).toContain('JWT_JWKS_URL');
  });
});

describe('loadConfig: JWT_PUBLIC_KEY must be a usable public key', () => {
  const base = { ...MINIMAL, JWT_ISSUER: 'iss', JWT_AUDIENCE: 'aud' };
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const rsaPublic = pair.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const rsaPrivate = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

  it.each([
    ['not PEM at all', 'PK-SENTINEL-not-a-key'],
    ['a PEM header around garbage', '-----BEGIN PUBLIC KEY-----\nPK-SENTINEL-garbage\n-----END PUBLIC KEY-----'],
    ['a truncated key', rsaPublic.slice(0, 120)],
    ['a private key', rsaPrivate],
  ])('%s → a ConfigError naming JWT_PUBLIC_KEY only, without its value', (_name, value) => {
    const error = configError({ ...base, JWT_PUBLIC_KEY: value });
    expect(namesIn(error)).toEqual(['JWT_PUBLIC_KEY']);
    const text = [error.message, JSON.stringify(error), error.stack ?? ''].join('\n');
    expect(text).not.toContain('PK-SENTINEL');
    expect(text).not.toContain(rsaPrivate.split('\n')[1]);
  });

  it('accepts PEM with escaped newlines (one-line environment values)', () => {
    const config = loadConfig({ ...base, JWT_PUBLIC_KEY: rsaPublic.replace(/\n/g, '\\n') });
    expect(config.callers.jwt?.publicKey).toBe(rsaPublic);
  });

  it('createGateway refuses it with ConfigError (main.ts exits 78), not a crash in the authenticator', async () => {
    const error = await createGateway({ ...base, JWT_PUBLIC_KEY: 'PK-SENTINEL-x' }, { logger: false }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(namesIn(error as ConfigError)).toEqual(['JWT_PUBLIC_KEY']);
  });
});

describe('loadConfig: STORE_ENCRYPTION_KEYS', () => {
  const k = (byte: number) => Buffer.alloc(32, byte).toString('base64');

  it('is optional: unset means no encryption', () => {
    expect(loadConfig(MINIMAL).storeEncryption.keys).toEqual([]);
  });

  it('parses id:key entries in order (the first seals), also from a file', () => {
    const raw = `new:${k(2)}, old:${k(1)}`;
    for (const env of [{ STORE_ENCRYPTION_KEYS: raw }, { STORE_ENCRYPTION_KEYS_FILE: tempFile(`${raw}\n`) }]) {
      const keys = loadConfig({ ...MINIMAL, ...env }).storeEncryption.keys;
      expect(keys.map((key) => key.id)).toEqual(['new', 'old']);
      expect(keys[0].key.reveal()).toBe(k(2));
      expect(JSON.stringify(keys)).not.toContain(k(2));
    }
  });

  it.each([
    ['no id', k(1)],
    ['a bad id', `bad id!:${k(1)}`],
    ['a short key', `a:${Buffer.alloc(16, 7).toString('base64')}`],
    ['a key that is not base64', `a:KEY-SENTINEL-${'x'.repeat(30)}`],
    ['a duplicate id', `a:${k(1)},a:${k(2)}`],
  ])('%s → an error naming the entry, never the key', (_name, raw) => {
    const error = configError({ ...MINIMAL, STORE_ENCRYPTION_KEYS: raw });
    expect(namesIn(error).every((name) => name.startsWith('STORE_ENCRYPTION_KEYS['))).toBe(true);
    expect(error.message).not.toContain('SENTINEL');
    expect(error.message).not.toContain(k(1));
  });
});

describe('Secret', () => {
  const VALUE = 'top-secret-value-123';
  const secret = new Secret(VALUE);

  it('reveal() gives the value', () => {
    expect(secret.reveal()).toBe(VALUE);
  });

  it.each([
    ['String()', () => String(secret)],
    // Coercing a Secret to a string is exactly what these two check; the rules forbid it elsewhere.
    // eslint-disable-next-line @typescript-eslint/restrict-template-expressions
    ['template literal', () => `${secret}`],
    // eslint-disable-next-line @typescript-eslint/restrict-plus-operands
    ['concatenation', () => 'x' + secret],
    ['JSON.stringify', () => JSON.stringify(secret)],
    ['JSON.stringify (nested)', () => JSON.stringify({ upstream: { password: secret } })],
    ['util.inspect', () => inspect(secret)],
    ['util.inspect (nested, showHidden)', () => inspect({ password: secret }, { showHidden: true, depth: 10 })],
  ])('%s never prints the value', (_label, render) => {
    const text = render();
    expect(text).not.toContain(VALUE);
    expect(text).toContain('[secret]');
  });

  it('Object.keys and entries expose nothing', () => {
    expect(Object.keys(secret)).toEqual([]);
    expect(Object.entries(secret)).toEqual([]);
  });
});

describe('startup fails fast on a bad configuration', () => {
  it('createGateway throws ConfigError before building or listening, and names the variables only', async () => {
    const error = await createGateway(
      {
        UPSTREAM_BASE_URL: 'not a url',
        UPSTREAM_USERNAME: USERNAME,
        UPSTREAM_PASSWORD: PASSWORD,
        API_KEYS: '{oops',
        PORT: '70000',
      },
      { logger: false },
    ).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    const problems = namesIn(error as ConfigError);
    expect(problems).toEqual(expect.arrayContaining(['UPSTREAM_BASE_URL', 'API_KEYS', 'PORT']));
    expect((error as ConfigError).message).not.toContain(PASSWORD);
    expect((error as ConfigError).message).not.toContain(USERNAME);
  });
});
