import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { SCOPES, type ApiKeyEntry, type AppConfig, type HostPort, type StoreConfig } from './app-config.js';
import { EnvironmentVariables } from './environment.js';
import { Secret } from './secret.js';

type Env = Record<string, string | undefined>;

/** Variables that may instead be read from a file (Kubernetes secrets), as `<NAME>_FILE`. */
const FILE_VARIABLES = ['UPSTREAM_USERNAME', 'UPSTREAM_PASSWORD', 'API_KEYS'] as const;

/** Startup fails with every problem listed by variable name; values are never included. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Env): AppConfig {
  const problems: string[] = [];
  const resolved = resolveFileVariables(env, problems);

  const vars = plainToInstance(EnvironmentVariables, resolved, { exposeDefaultValues: true });
  for (const error of validateSync(vars, { forbidUnknownValues: false })) {
    // class-validator's messages name the property and the rule, never the value.
    problems.push(`${error.property}: ${Object.values(error.constraints ?? {}).join('; ') || 'is invalid'}`);
  }
  const bad = new Set(problems.map((p) => p.split(':')[0]));

  const store = storeConfig(vars, problems);
  const apiKeys = bad.has('API_KEYS') ? [] : parseApiKeys(vars.API_KEYS, problems);
  const jwt = jwtConfig(vars, problems);
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
      bodyLimitBytes: vars.BODY_LIMIT_BYTES,
      requestTimeoutMs: vars.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: vars.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    logging: { level: vars.LOG_LEVEL },
    upstream: {
      baseUrl: vars.UPSTREAM_BASE_URL.replace(/\/+$/, ''),
      username: new Secret(vars.UPSTREAM_USERNAME),
      password: new Secret(vars.UPSTREAM_PASSWORD),
      timeoutMs: vars.UPSTREAM_TIMEOUT_MS,
      circuitResetMs: vars.UPSTREAM_CIRCUIT_RESET_MS,
    },
    token: { refreshSkewSeconds: vars.TOKEN_REFRESH_SKEW_SECONDS },
    store,
    callers: { apiKeys, jwt, userQuotaPerMinute: vars.USER_QUOTA_PER_MINUTE },
    idempotency: { ttlSeconds: vars.IDEMPOTENCY_TTL_SECONDS },
    build: { commit: vars.BUILD_COMMIT ?? 'unknown' },
  };
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
  if (vars.REDIS_SENTINELS) {
    if (!vars.REDIS_SENTINEL_NAME) problems.push('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS');
    return {
      mode: 'sentinel',
      keyPrefix,
      sentinels: hostPorts(vars.REDIS_SENTINELS),
      name: vars.REDIS_SENTINEL_NAME ?? '',
    };
  }
  if (vars.REDIS_CLUSTER_NODES) return { mode: 'cluster', keyPrefix, nodes: hostPorts(vars.REDIS_CLUSTER_NODES) };
  if (vars.REDIS_URL) return { mode: 'standalone', keyPrefix, url: vars.REDIS_URL };
  return { mode: 'memory', keyPrefix };
}

function hostPorts(list: string): HostPort[] {
  return list.split(',').map((item) => {
    const at = item.lastIndexOf(':');
    return { host: item.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(item.slice(at + 1)) };
  });
}

function parseApiKeys(raw: string | undefined, problems: string[]): ApiKeyEntry[] {
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
 * True when the text is a public key usable for JWT signatures (internal-api.md §1: asymmetric
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
