import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import {
  SCOPES,
  type ApiKeyEntry,
  type AppConfig,
  type HostPort,
  type RedisAuth,
  type RedisTls,
  type StoreConfig,
  type StoreEncryptionKey,
} from './app-config.js';
import { EnvironmentVariables } from './environment.js';
import { Secret } from './secret.js';
import { tracingConfigFrom } from './tracing-config.js';
import { minimumIdempotencyTtlSeconds } from './inquiry-lifetimes.js';
import { budgetConfigFrom, parseInquiryPrices } from './budget-config.js';
import { ledgerConfigFrom } from '../ledger/ledger-config.js';

type Env = Record<string, string | undefined>;

/** Variables that may instead be read from a file (Kubernetes secrets), as `<NAME>_FILE`. */
const FILE_VARIABLES = [
  'UPSTREAM_USERNAME',
  'UPSTREAM_PASSWORD',
  'API_KEYS',
  'BUDGETS',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'STORE_ENCRYPTION_KEYS',
  'SUBJECT_HASH_KEYS',
  'LEDGER_DATABASE_URL',
] as const;

/** Where a reader finds every variable with an example value (docs/operations.md#configuration). */
const WHERE_TO_LOOK = '.env.example shows a complete set; docs/operations.md#configuration describes every variable.';

/**
 * Startup fails with every problem listed by variable name, one line each saying what is wrong
 * and what is expected; values are never included.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}\n${WHERE_TO_LOOK}`);
    this.name = 'ConfigError';
  }
}

/**
 * One message for a variable that failed validation: "is not set" when it is absent (only
 * required variables are checked then), else the expectation its rules share (environment.ts),
 * never the value itself.
 */
function describeInvalid(value: string | undefined, constraints: Record<string, string> = {}): string {
  const expected = Object.values(constraints)[0] ?? 'is not valid';
  const anyValue = expected === 'must not be empty';
  if (value === undefined) return anyValue ? 'is not set (it is required)' : `is not set (required: it ${expected})`;
  if (value.trim() === '') return anyValue ? 'is empty (a value is required)' : `is empty: it ${expected}`;
  return expected;
}

export function loadConfig(env: Env): AppConfig {
  const problems: string[] = [];
  const resolved = resolveFileVariables(env, problems);
  // One message per variable: NAME is not also "not set" when NAME_FILE could not be read.
  const reported = new Set(problems.map((p) => p.split(':')[0].replace(/_FILE$/, '')));

  const vars = plainToInstance(EnvironmentVariables, resolved, { exposeDefaultValues: true });
  for (const error of validateSync(vars, { forbidUnknownValues: false })) {
    if (reported.has(error.property)) continue;
    problems.push(`${error.property}: ${describeInvalid(resolved[error.property], error.constraints)}`);
  }
  const bad = new Set(problems.map((p) => p.split(':')[0]));

  const store = storeConfig(vars, problems);
  const apiKeys = bad.has('API_KEYS') ? [] : parseApiKeys(vars.API_KEYS, problems);
  const jwt = jwtConfig(vars, problems);
  const storeEncryption = { keys: parseEncryptionKeys('STORE_ENCRYPTION_KEYS', vars.STORE_ENCRYPTION_KEYS, problems) };
  const subjectHash = subjectHashConfig(vars, storeEncryption.keys, problems);
  const corsOrigins = parseCorsOrigins(vars.CORS_ORIGINS, problems);
  const tracing = tracingConfigFrom(resolved, problems);
  const ttlFloor = minimumIdempotencyTtlSeconds({
    timeoutMs: vars.UPSTREAM_TIMEOUT_MS,
    advancedTimeoutMs: vars.UPSTREAM_ADVANCED_TIMEOUT_MS,
  });
  if (!bad.has('IDEMPOTENCY_TTL_SECONDS') && vars.IDEMPOTENCY_TTL_SECONDS < ttlFloor) {
    // Not secrets: the numbers are named, so the operator sees which to change.
    problems.push(
      `IDEMPOTENCY_TTL_SECONDS: ${vars.IDEMPOTENCY_TTL_SECONDS} is shorter than an inquiry can hold its key and record ` +
        `(${ttlFloor} s with UPSTREAM_TIMEOUT_MS=${vars.UPSTREAM_TIMEOUT_MS} and ` +
        `UPSTREAM_ADVANCED_TIMEOUT_MS=${vars.UPSTREAM_ADVANCED_TIMEOUT_MS}); set it to at least ${ttlFloor}`,
    );
  }
  const budgets = budgetConfigFrom(vars, resolved.BUDGETS_FILE, problems);
  const inquiryPrices = parseInquiryPrices(vars.INQUIRY_PRICES, problems);
  const ledger = ledgerConfigFrom(resolved, problems);
  if (!ledger.drain && store.mode === 'memory') {
    problems.push(
      'LEDGER_DRAIN: false needs Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES): an in-process queue is drained by its own process only',
    );
  }
  if (vars.OPS_PORT !== undefined && vars.OPS_PORT === vars.PORT) {
    problems.push('OPS_PORT: must differ from PORT (unset it to serve everything on PORT)');
  }
  // A malformed API_KEYS is already reported: no second, misleading "none configured".
  if (apiKeys.length === 0 && !jwt && !problems.some((p) => p.startsWith('API_KEYS'))) {
    problems.push(
      'API_KEYS: at least one of API_KEYS / API_KEYS_FILE and JWT (JWT_JWKS_URL or JWT_PUBLIC_KEY) must be configured',
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);

  return {
    http: {
      port: vars.PORT,
      opsPort: vars.OPS_PORT,
      bodyLimitBytes: vars.BODY_LIMIT_BYTES,
      requestTimeoutMs: vars.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: vars.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      corsOrigins,
    },
    logging: { level: vars.LOG_LEVEL },
    tracing,
    ledger,
    upstream: {
      baseUrl: vars.UPSTREAM_BASE_URL.replace(/\/+$/, ''),
      username: new Secret(vars.UPSTREAM_USERNAME),
      password: new Secret(vars.UPSTREAM_PASSWORD),
      timeoutMs: vars.UPSTREAM_TIMEOUT_MS,
      advancedTimeoutMs: vars.UPSTREAM_ADVANCED_TIMEOUT_MS,
      circuitResetMs: vars.UPSTREAM_CIRCUIT_RESET_MS,
      maxResponseBytes: vars.UPSTREAM_MAX_RESPONSE_BYTES,
    },
    token: { refreshSkewSeconds: vars.TOKEN_REFRESH_SKEW_SECONDS },
    store,
    storeEncryption,
    subjectHash,
    callers: { apiKeys, jwt, userQuotaPerMinute: vars.USER_QUOTA_PER_MINUTE },
    idempotency: { ttlSeconds: vars.IDEMPOTENCY_TTL_SECONDS },
    inquiryWaits: { maxHeld: vars.INQUIRY_MAX_HELD_WAITS },
    budgets,
    inquiryPrices,
    build: { commit: vars.BUILD_COMMIT ?? 'unknown' },
    secretFiles: {
      apiKeys: resolved.API_KEYS_FILE,
      upstreamUsername: resolved.UPSTREAM_USERNAME_FILE,
      upstreamPassword: resolved.UPSTREAM_PASSWORD_FILE,
      pollIntervalMs: vars.SECRET_FILES_POLL_MS,
    },
  };
}

/**
 * `CORS_ORIGINS`: exact origins (scheme, host, optional port; no path), comma-separated. An
 * origin is compared as the browser sends it, so each is normalised by the URL parser and must
 * come out unchanged: a typo fails at startup instead of silently blocking a web app.
 */
function parseCorsOrigins(raw: string | undefined, problems: string[]): string[] {
  const origins = (raw ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin.length > 0);
  for (const origin of origins) {
    let normalised: string | null;
    try {
      normalised = new URL(origin).origin;
    } catch {
      normalised = null;
    }
    if (normalised !== origin || !/^https?:/.test(origin)) {
      problems.push('CORS_ORIGINS: each entry must be an exact http(s) origin such as https://app.example.com');
      break;
    }
  }
  return origins;
}

function resolveFileVariables(env: Env, problems: string[]): Env {
  const resolved: Env = {};
  for (const [name, value] of Object.entries(env)) {
    // Empty values count as unset, as in most deployment tooling.
    if (value !== undefined && value !== '') resolved[name] = value;
  }
  for (const name of FILE_VARIABLES) {
    const path = resolved[`${name}_FILE`];
    if (path === undefined) continue;
    if (resolved[name] !== undefined) {
      problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      resolved[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch {
      problems.push(`${name}_FILE: cannot read the file it names`);
    }
  }
  return resolved;
}

function storeConfig(vars: EnvironmentVariables, problems: string[]): StoreConfig {
  const keyPrefix = vars.REDIS_KEY_PREFIX;
  const chosen = [
    vars.REDIS_URL && 'REDIS_URL',
    vars.REDIS_SENTINELS && 'REDIS_SENTINELS',
    vars.REDIS_CLUSTER_NODES && 'REDIS_CLUSTER_NODES',
  ].filter(Boolean);
  if (chosen.length > 1) {
    problems.push(`${chosen[0]}: set only one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES`);
    return { mode: 'memory', keyPrefix };
  }
  if (chosen.length === 0) {
    for (const name of REDIS_ONLY_VARIABLES) {
      if (vars[name] !== undefined)
        problems.push(`${name}: only used with a Redis (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES)`);
    }
    return { mode: 'memory', keyPrefix };
  }
  let auth: RedisAuth = { username: vars.REDIS_USERNAME, password: secret(vars.REDIS_PASSWORD) };
  let tlsWanted = vars.REDIS_TLS === 'true';
  if (vars.REDIS_SENTINELS) {
    if (!vars.REDIS_SENTINEL_NAME) problems.push('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS');
    return {
      mode: 'sentinel',
      keyPrefix,
      sentinels: hostPorts(vars.REDIS_SENTINELS),
      name: vars.REDIS_SENTINEL_NAME ?? '',
      auth,
      sentinelAuth: { username: vars.REDIS_SENTINEL_USERNAME, password: secret(vars.REDIS_SENTINEL_PASSWORD) },
      tls: redisTls(tlsWanted, vars, problems),
    };
  }
  if (vars.REDIS_SENTINEL_USERNAME || vars.REDIS_SENTINEL_PASSWORD) {
    problems.push('REDIS_SENTINEL_PASSWORD: only used with REDIS_SENTINELS');
  }
  if (vars.REDIS_CLUSTER_NODES) {
    return {
      mode: 'cluster',
      keyPrefix,
      nodes: hostPorts(vars.REDIS_CLUSTER_NODES),
      auth,
      tls: redisTls(tlsWanted, vars, problems),
    };
  }
  // Standalone: credentials in the URL are taken out of it, so that only the Secret holds them.
  let url: URL;
  try {
    url = new URL(vars.REDIS_URL as string);
  } catch {
    if (!problems.some((p) => p.startsWith('REDIS_URL'))) problems.push('REDIS_URL: is not a valid URL');
    return { mode: 'memory', keyPrefix };
  }
  if (url.username || url.password) {
    if (vars.REDIS_USERNAME || vars.REDIS_PASSWORD) {
      problems.push(
        'REDIS_PASSWORD: set the credentials either in REDIS_URL or in REDIS_USERNAME/REDIS_PASSWORD, not both',
      );
    }
    auth = {
      username: url.username ? decodeURIComponent(url.username) : undefined,
      password: secret(url.password ? decodeURIComponent(url.password) : undefined),
    };
    url.username = '';
    url.password = '';
  }
  if (url.protocol === 'rediss:') {
    if (vars.REDIS_TLS === 'false') problems.push('REDIS_TLS: false contradicts a rediss:// REDIS_URL');
    tlsWanted = true;
  }
  return { mode: 'standalone', keyPrefix, url: url.toString(), auth, tls: redisTls(tlsWanted, vars, problems) };
}

/** Settings that mean nothing without Redis: set alone, they are a mistake worth stopping for. */
const REDIS_ONLY_VARIABLES = [
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_USERNAME',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_TLS',
  'REDIS_TLS_CA_FILE',
  'REDIS_TLS_CERT_FILE',
  'REDIS_TLS_KEY_FILE',
] as const;

function secret(value: string | undefined): Secret | undefined {
  return value === undefined ? undefined : new Secret(value);
}

/** TLS settings, with the PEM files read now: an unreadable file stops startup, naming the variable. */
function redisTls(wanted: boolean, vars: EnvironmentVariables, problems: string[]): RedisTls | undefined {
  const files = ['REDIS_TLS_CA_FILE', 'REDIS_TLS_CERT_FILE', 'REDIS_TLS_KEY_FILE'] as const;
  if (!wanted) {
    for (const name of files) {
      if (vars[name]) problems.push(`${name}: needs TLS (a rediss:// REDIS_URL, or REDIS_TLS=true)`);
    }
    return undefined;
  }
  if (Boolean(vars.REDIS_TLS_CERT_FILE) !== Boolean(vars.REDIS_TLS_KEY_FILE)) {
    problems.push(
      'REDIS_TLS_CERT_FILE: a client certificate needs its key (REDIS_TLS_KEY_FILE), and the other way round',
    );
  }
  const read = (name: (typeof files)[number]): string | undefined => {
    const path = vars[name];
    if (!path) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch {
      problems.push(`${name}: cannot read the file it names`);
      return undefined;
    }
  };
  return { ca: read('REDIS_TLS_CA_FILE'), cert: read('REDIS_TLS_CERT_FILE'), key: secret(read('REDIS_TLS_KEY_FILE')) };
}

function hostPorts(list: string): HostPort[] {
  return list.split(',').map((item) => {
    const at = item.lastIndexOf(':');
    return { host: item.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(item.slice(at + 1)) };
  });
}

/** Parses an API_KEYS document; problems are pushed by entry and field, never quoting a value. */
export function parseApiKeys(raw: string | undefined, problems: string[]): ApiKeyEntry[] {
  if (raw === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push('API_KEYS: is not valid JSON');
    return [];
  }
  if (!Array.isArray(parsed)) {
    problems.push('API_KEYS: must be a JSON array of {clientId, keySha256, scopes}');
    return [];
  }
  const entries: ApiKeyEntry[] = [];
  const seenHashes = new Set<string>();
  parsed.forEach((item: unknown, index) => {
    const where = `API_KEYS[${index}]`;
    const entry = item as Partial<Record<keyof ApiKeyEntry, unknown>> | null;
    if (typeof entry !== 'object' || entry === null) return problems.push(`${where}: must be an object`);
    const before = problems.length;
    if (typeof entry.clientId !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(entry.clientId)) {
      problems.push(`${where}.clientId: must be 1-64 of A-Z a-z 0-9 _ . -`);
    }
    if (typeof entry.keySha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(entry.keySha256)) {
      problems.push(`${where}.keySha256: must be 64 hex digits (the SHA-256 of the key)`);
    } else if (seenHashes.has(entry.keySha256.toLowerCase())) {
      problems.push(`${where}.keySha256: the same key is configured twice`);
    }
    const scopes = entry.scopes;
    if (!Array.isArray(scopes) || !scopes.every((s) => (SCOPES as readonly unknown[]).includes(s))) {
      problems.push(`${where}.scopes: must be an array of ${SCOPES.join(', ')}`);
    }
    const quota = entry.quotaPerMinute;
    if (quota !== undefined && !(Number.isInteger(quota) && (quota as number) > 0 && (quota as number) <= 1_000_000)) {
      problems.push(`${where}.quotaPerMinute: must be a whole number from 1 to 1000000 (omit it for no quota)`);
    }
    if (problems.length === before) {
      const keySha256 = (entry.keySha256 as string).toLowerCase();
      seenHashes.add(keySha256);
      entries.push({
        clientId: entry.clientId as string,
        keySha256,
        scopes: [...new Set(scopes as ApiKeyEntry['scopes'])],
        ...(quota !== undefined ? { quotaPerMinute: quota as number } : {}),
      });
    }
  });
  return entries;
}

function jwtConfig(vars: EnvironmentVariables, problems: string[]): AppConfig['callers']['jwt'] {
  if (!vars.JWT_JWKS_URL && !vars.JWT_PUBLIC_KEY) return undefined;
  if (vars.JWT_JWKS_URL && vars.JWT_PUBLIC_KEY)
    problems.push('JWT_JWKS_URL: set either JWT_JWKS_URL or JWT_PUBLIC_KEY, not both');
  if (!vars.JWT_ISSUER) problems.push('JWT_ISSUER: required when JWT is configured');
  if (!vars.JWT_AUDIENCE) problems.push('JWT_AUDIENCE: required when JWT is configured');
  const publicKey = vars.JWT_PUBLIC_KEY?.replace(/\\n/g, '\n');
  if (publicKey !== undefined && !isVerificationKey(publicKey)) {
    problems.push('JWT_PUBLIC_KEY: must be a PEM public key (RSA, EC or EdDSA), not a private key');
  }
  return {
    jwksUrl: vars.JWT_JWKS_URL,
    publicKey,
    issuer: vars.JWT_ISSUER ?? '',
    audience: vars.JWT_AUDIENCE ?? '',
    jwksMaxStaleSeconds: vars.JWT_JWKS_MAX_STALE_SECONDS,
  };
}

/**
 * True when the text is a public key usable for JWT signatures (docs/api.md §1: asymmetric
 * only). Parsed here, at startup, so a malformed key is a configuration error naming the
 * variable (exit 78) rather than a crash with a stack trace when the authenticator is built.
 * A private key is refused too: it does not belong in the gateway's environment.
 */
function isVerificationKey(pem: string): boolean {
  if (/PRIVATE KEY/.test(pem)) return false;
  try {
    const key = createPublicKey(pem);
    return ['rsa', 'rsa-pss', 'ec', 'ed25519', 'ed448'].includes(key.asymmetricKeyType ?? '');
  } catch {
    return false;
  }
}

/**
 * The end users' pseudonym keys (crypto/subject-hash.ts): SUBJECT_HASH_KEYS, else derived from
 * STORE_ENCRYPTION_KEYS. With both, the derived keys still compare: the records hashed before
 * SUBJECT_HASH_KEYS was set stay visible to their users. Neither: optional as encryption at
 * rest is (decision 0004, the contract's environment keeps working), warned at start when JWT
 * callers are configured.
 */
function subjectHashConfig(vars: EnvironmentVariables, storeKeys: StoreEncryptionKey[], problems: string[]) {
  return { keys: parseEncryptionKeys('SUBJECT_HASH_KEYS', vars.SUBJECT_HASH_KEYS, problems), derivedFrom: storeKeys };
}

/**
 * A key ring (STORE_ENCRYPTION_KEYS, SUBJECT_HASH_KEYS): `id:key[,id:key…]`, keys of 32 bytes in
 * base64 (`openssl rand -base64 32`). Problems name the entry by position, never a key.
 */
function parseEncryptionKeys(name: string, raw: string | undefined, problems: string[]): StoreEncryptionKey[] {
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
