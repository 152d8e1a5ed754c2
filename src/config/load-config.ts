import { readFileSync } from 'node:fs';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import type { AppConfig } from './app-config.js';
import { EnvironmentVariables } from './environment.js';
import { Secret } from './secret.js';
import { tracingConfigFrom } from './tracing-config.js';
import { minimumIdempotencyTtlSeconds } from './inquiry-lifetimes.js';
import { budgetConfigFrom, parseInquiryPrices } from './budget-config.js';
import { jwtConfig, parseApiKeys } from './caller-config.js';
import { parseEncryptionKeys, subjectHashConfig } from './key-rings.js';
import { storeConfig } from './store-config.js';
import { parseInquiryOperations } from '../inquiry/catalog/operations-config.js';
import { ledgerConfigFrom } from './ledger-config.js';
import { reuseConfigFrom } from './reuse-config.js';
import { trackingConfigFrom } from './tracking-config.js';
import { consoleOidcConfigFrom } from './console-oidc-config.js';
import { webhooksConfigFrom } from './webhooks-config.js';

export { parseApiKeys } from './caller-config.js';

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
  'INQUIRY_REUSE',
  'INQUIRY_OPERATIONS',
  'REUSE_HMAC_KEY',
  'UPSTREAM_TRACKING',
  'WEBHOOKS',
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
  const operations = parseInquiryOperations(resolved.INQUIRY_OPERATIONS, problems);
  const operationNames = operations.map((operation) => operation.name);
  const apiKeys = bad.has('API_KEYS') ? [] : parseApiKeys(vars.API_KEYS, operationNames, problems);
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
  const inquiryPrices = parseInquiryPrices(vars.INQUIRY_PRICES, operations, problems);
  const ledger = ledgerConfigFrom(resolved, problems);
  const reuse = reuseConfigFrom(resolved, operationNames, problems);
  const tracking = trackingConfigFrom(resolved, problems);
  const consoleOidc = consoleOidcConfigFrom(resolved, jwt, problems);
  const webhooks = webhooksConfigFrom(resolved, problems);
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
    operations,
    inquiryPrices,
    reuse,
    ...(tracking ? { tracking } : {}),
    ...(consoleOidc ? { consoleOidc } : {}),
    webhooks,
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
