import type { TracingConfig } from './tracing-config.js';
import type { LedgerConfig } from './ledger-config.js';
import type { ReuseConfig } from './reuse-config.js';
import type { TrackingConfig } from './tracking-config.js';
import type { ConsoleOidcConfig } from './console-oidc-config.js';
import type { WebhooksConfig } from './webhooks-config.js';
import type { Secret } from './secret.js';
import { OPERATION_NAME, type OperationDefinition } from '../inquiry/catalog/operation.js';
import type { BudgetConfig, InquiryPriceTable } from './budget-config.js';

/**
 * Scopes a caller may hold (docs/api.md §1); `ledger:read` and `ledger:reconcile` open the
 * administration routes (docs/api.md §7) and are honoured on API keys and operators' console tokens only.
 */
export const SCOPES = ['inquiries:read', 'kyc:advanced', 'ledger:read', 'ledger:reconcile'] as const;
/** An operation's scope, `kyc:{name}` (docs/api.md §10): the built-ins' and the added ones'. */
export type OperationScope = `kyc:${string}`;
export type Scope = (typeof SCOPES)[number] | OperationScope;

/**
 * Whether `value` is a scope: one of SCOPES, or `kyc:` and an operation's name. A key or token may
 * name an operation this deployment's catalog lacks (one catalog, many keys): it opens nothing.
 */
export function isScope(value: unknown): value is Scope {
  if (typeof value !== 'string') return false;
  return (SCOPES as readonly string[]).includes(value) || OPERATION_SCOPE.test(value);
}
const OPERATION_SCOPE = new RegExp(`^kyc:${OPERATION_NAME.source.slice(1)}`);

export interface ApiKeyEntry {
  clientId: string;
  /** SHA-256 of the key, lower-case hex; the key itself is never configured. */
  keySha256: string;
  scopes: Scope[];
  /** Inquiries per minute for this client; no quota when absent. */
  quotaPerMinute?: number;
}

/** Credentials of a Redis ACL user (or of the `default` user when only a password is set). */
export interface RedisAuth {
  username?: string;
  password?: Secret;
}

/** TLS towards Redis: PEM contents read from REDIS_TLS_*_FILE (none = the system CAs, no client certificate). */
export interface RedisTls {
  ca?: string;
  cert?: string;
  key?: Secret;
}

/** What every Redis mode shares: the key prefix, the data nodes' credentials, TLS when enabled. */
interface RedisCommon {
  keyPrefix: string;
  auth: RedisAuth;
  tls?: RedisTls;
}

export type StoreConfig =
  | { mode: 'memory'; keyPrefix: string }
  | (RedisCommon & { mode: 'standalone'; url: string })
  | (RedisCommon & { mode: 'sentinel'; sentinels: HostPort[]; name: string; sentinelAuth: RedisAuth })
  | (RedisCommon & { mode: 'cluster'; nodes: HostPort[] });

/** One key of the store encryption ring (STORE_ENCRYPTION_KEYS); the key is 32 bytes, base64. */
export interface StoreEncryptionKey {
  id: string;
  key: Secret;
}

export interface HostPort {
  host: string;
  port: number;
}

/**
 * The validated configuration, one slice per feature module. Services read their own
 * slice with `ConfigService<AppConfig, true>.get('<slice>', { infer: true })`.
 */
export interface AppConfig {
  http: {
    port: number;
    /** The operations listener (`/metrics`, `/docs`), when separate from `port`. */
    opsPort?: number;
    bodyLimitBytes: number;
    /** Headers and body must arrive within this (408 otherwise). */
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    /** Browser origins allowed by CORS; empty: CORS off. */
    corsOrigins: string[];
  };
  logging: { level: string };
  /** OpenTelemetry tracing, from the standard OTEL_* variables (observability/tracing.ts). */
  tracing: TracingConfig;
  /** The ledger in PostgreSQL (docs/api.md §6; ledger/ledger-config.ts). */
  ledger: LedgerConfig;
  upstream: {
    baseUrl: string;
    username: Secret;
    password: Secret;
    /** Per call of a `standard` inquiry, and of GetToken. */
    timeoutMs: number;
    /** Per call of an `advanced` inquiry (its supplier chain may take several times longer). */
    advancedTimeoutMs: number;
    circuitResetMs: number;
    maxResponseBytes: number;
  };
  token: { refreshSkewSeconds: number };
  store: StoreConfig;
  /** Encryption at rest of what the Redis stores write; the first key seals, all open. Empty: off. */
  storeEncryption: { keys: StoreEncryptionKey[] };
  /**
   * End users' pseudonyms (crypto/subject-hash.ts): HMAC keys, the first hashes, all compare.
   * `keys`: SUBJECT_HASH_KEYS. `derivedFrom`: STORE_ENCRYPTION_KEYS, each turned into a key of
   * its own by HKDF; they hash when `keys` is empty, else they only compare (records hashed
   * before SUBJECT_HASH_KEYS was set still match their user).
   */
  subjectHash: { keys: StoreEncryptionKey[]; derivedFrom: StoreEncryptionKey[] };
  callers: {
    apiKeys: ApiKeyEntry[];
    jwt?: {
      jwksUrl?: string;
      publicKey?: string;
      issuer: string;
      audience: string;
      /** How long past their refresh the last JWKS keys still verify tokens while the IdP is unreachable. */
      jwksMaxStaleSeconds: number;
    };
    /** Inquiries per minute for each end user (JWT `sub`); 0 = no quota. */
    userQuotaPerMinute: number;
  };
  idempotency: { ttlSeconds: number };
  /** `Prefer: wait` long-polls held at once by this replica (docs/api.md, "Asynchronous answers"). */
  inquiryWaits: { maxHeld: number };
  /** Spend budgets per client and calendar window (docs/api.md §6, "Budgets"). */
  budgets: BudgetConfig;
  /** The operations offered (docs/api.md §10): the built-ins, then INQUIRY_OPERATIONS' entries. */
  operations: readonly OperationDefinition[];
  /** Cost units of an inquiry (`INQUIRY_PRICES`), read through accounting/inquiry-prices.ts. */
  inquiryPrices: InquiryPriceTable;
  /** Reuse of paid answers per operation, and the key of the questions' hash (docs/api.md §2; reuse/reuse-config.ts). */
  reuse: ReuseConfig;
  /** The upstream's request-tracking service, when configured (docs/api.md §8; config/tracking-config.ts). */
  tracking?: TrackingConfig;
  /** The console's sign-in with the company's OpenID provider, when configured (config/console-oidc-config.ts). */
  consoleOidc?: ConsoleOidcConfig;
  /** Signed events to the company's services (docs/api.md §9; config/webhooks-config.ts). */
  webhooks: WebhooksConfig;
  build: { commit: string };
  /** Secret files re-read while running (rotation without restart); absent = given inline. */
  secretFiles: { apiKeys?: string; upstreamUsername?: string; upstreamPassword?: string; pollIntervalMs: number };
}
