import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, IsUrl, Matches, Max, Min, MinLength } from 'class-validator';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/*
 * One message per variable saying what is expected (load-config.ts reports the first one): each
 * rule of a variable carries the same words, so "10s" reads "must be a whole number of
 * milliseconds between 100 and 300000", not three limits at once. Messages never hold the value.
 */

function compose(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, property) => {
    for (const decorate of decorators) decorate(target, property);
  };
}

/** An integer from `min` to `max` (in `unit`), read from the environment's string. */
function WholeNumber(min: number, max: number, unit?: string): PropertyDecorator {
  const message = `must be a whole number${unit ? ` of ${unit}` : ''} between ${min} and ${max}`;
  return compose(
    Type(() => Number),
    IsInt({ message }),
    Min(min, { message }),
    Max(max, { message }),
  );
}

function NonEmptyString(): PropertyDecorator {
  const message = 'must not be empty';
  return compose(IsString({ message }), MinLength(1, { message }));
}

function HttpUrl(example: string): PropertyDecorator {
  return IsUrl(
    { require_tld: false, protocols: ['http', 'https'], require_protocol: true },
    { message: `must be an http:// or https:// URL such as ${example}` },
  );
}

/** `host:port,host:port` lists for Sentinel and Cluster seeds. */
export const HOST_PORT_LIST = /^[A-Za-z0-9.\-[\]:]+:\d{1,5}(,[A-Za-z0-9.\-[\]:]+:\d{1,5})*$/;

/**
 * The whole environment of docs/api.md §5 in one class, validated at startup.
 * `*_FILE` variants are resolved into their plain names before validation (see load-config).
 */
export class EnvironmentVariables {
  @WholeNumber(0, 65535)
  PORT = 3000;

  /**
   * When set, `/metrics` and `/docs` are served on this port only (for Prometheus and operators)
   * and answer 404 on PORT, so an Ingress publishing PORT cannot expose them.
   */
  @IsOptional()
  @WholeNumber(1, 65535)
  OPS_PORT?: number;

  @HttpUrl('https://verify.example.com')
  UPSTREAM_BASE_URL!: string;

  @NonEmptyString()
  UPSTREAM_USERNAME!: string;

  @NonEmptyString()
  UPSTREAM_PASSWORD!: string;

  @WholeNumber(100, 300_000, 'milliseconds')
  UPSTREAM_TIMEOUT_MS = 10_000;

  /**
   * Not in the contract's table: per upstream call of an `advanced` inquiry, whose supplier chain
   * may take several times a standard call (docs/upstream-api.md §4.4.7). The default covers the
   * three-supplier chain at the standard timeout each.
   */
  @WholeNumber(100, 300_000, 'milliseconds')
  UPSTREAM_ADVANCED_TIMEOUT_MS = 30_000;

  /** Not in the contract's table: how long the upstream circuit stays open before a trial call. */
  @WholeNumber(100, 600_000, 'milliseconds')
  UPSTREAM_CIRCUIT_RESET_MS = 10_000;

  /** Not in the contract's table: the largest upstream answer read; a larger one is `malformed`. */
  @WholeNumber(1024, 64 * 1024 * 1024, 'bytes')
  UPSTREAM_MAX_RESPONSE_BYTES = 256 * 1024;

  @WholeNumber(0, 86_400, 'seconds')
  TOKEN_REFRESH_SKEW_SECONDS = 300;

  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @IsOptional()
  @Matches(HOST_PORT_LIST, { message: 'must be host:port,host:port' })
  REDIS_SENTINELS?: string;

  @IsOptional()
  @NonEmptyString()
  REDIS_SENTINEL_NAME?: string;

  @IsOptional()
  @Matches(HOST_PORT_LIST, { message: 'must be host:port,host:port' })
  REDIS_CLUSTER_NODES?: string;

  /**
   * Not in the contract's table: credentials and TLS of the data nodes (all three modes) and
   * of the Sentinels. A password in REDIS_URL works too; REDIS_PASSWORD(_FILE) keeps it out
   * of the URL. TLS is on with rediss://, or with REDIS_TLS=true (Sentinel, Cluster).
   */
  @IsOptional()
  @NonEmptyString()
  REDIS_USERNAME?: string;

  @IsOptional()
  @NonEmptyString()
  REDIS_PASSWORD?: string;

  @IsOptional()
  @NonEmptyString()
  REDIS_SENTINEL_USERNAME?: string;

  @IsOptional()
  @NonEmptyString()
  REDIS_SENTINEL_PASSWORD?: string;

  @IsOptional()
  @IsIn(['true', 'false'], { message: 'must be true or false' })
  REDIS_TLS?: string;

  @IsOptional()
  @IsString()
  REDIS_TLS_CA_FILE?: string;

  @IsOptional()
  @IsString()
  REDIS_TLS_CERT_FILE?: string;

  @IsOptional()
  @IsString()
  REDIS_TLS_KEY_FILE?: string;

  @Matches(/^[A-Za-z0-9_.-]{1,32}$/, { message: 'must be 1-32 of A-Z a-z 0-9 _ . -' })
  REDIS_KEY_PREFIX = 'vgw';

  @IsOptional()
  @IsString()
  API_KEYS?: string;

  /** Budgets per client and for `*` (docs/api.md §6, "Budgets"); parsed in budget-config.ts. */
  @IsOptional()
  @IsString()
  BUDGETS?: string;

  /** Cost units per operation and handling type (docs/api.md §6, §7), parsed in budget-config.ts. */
  @IsOptional() @IsString() INQUIRY_PRICES?: string;
  /** Operations the operator adds (docs/api.md §10), parsed in inquiry/catalog/operations-config.ts. */
  @IsOptional() @IsString() INQUIRY_OPERATIONS?: string;

  /** IANA time zone in which a budget's day and month begin (checked against Intl in budget-config.ts). */
  @IsString()
  BUDGET_TIMEZONE = 'UTC';

  @IsIn(['gregory', 'persian'])
  BUDGET_CALENDAR = 'gregory';

  /** What one cost unit costs, `{"amount":"25000","currency":"IRR"}` (docs/api.md §6); parsed in budget-config.ts. */
  @IsOptional()
  @IsString()
  COST_UNIT_PRICE?: string;

  /**
   * Not in the contract's table: the key ring for encryption at rest, `id:base64key,id:base64key`
   * (32-byte keys). The first seals, every one opens. Unset: Redis holds values in clear (warned).
   */
  @IsOptional()
  @IsString()
  STORE_ENCRYPTION_KEYS?: string;

  /**
   * Not in the contract's table: the key ring end users (JWT `sub`) are pseudonymised with,
   * `id:base64key,…` (32-byte keys; HMAC-SHA-256, the first hashes, all compare). Unset: derived
   * from STORE_ENCRYPTION_KEYS (HKDF); neither: a plain SHA-256, warned (crypto/subject-hash.ts).
   */
  @IsOptional()
  @IsString()
  SUBJECT_HASH_KEYS?: string;

  @IsOptional()
  @HttpUrl('https://id.example.com/.well-known/jwks.json')
  JWT_JWKS_URL?: string;

  @IsOptional()
  @NonEmptyString()
  JWT_PUBLIC_KEY?: string;

  /**
   * Not in the contract's table: while the JWKS URL is unreachable, the last keys fetched keep
   * verifying tokens this long past their 10-minute refresh (0 = not at all); then 503 auth_unavailable.
   */
  @WholeNumber(0, 86_400, 'seconds')
  JWT_JWKS_MAX_STALE_SECONDS = 3600;

  @IsOptional()
  @NonEmptyString()
  JWT_ISSUER?: string;

  @IsOptional()
  @NonEmptyString()
  JWT_AUDIENCE?: string;

  @WholeNumber(60, 30 * 86_400, 'seconds')
  IDEMPOTENCY_TTL_SECONDS = 86_400;

  /**
   * Not in the contract's table: how many `Prefer: wait` long-polls one replica holds at once
   * (docs/api.md, "Asynchronous answers"); one more is refused with 429 and `Retry-After`.
   */
  @WholeNumber(0, 100_000)
  INQUIRY_MAX_HELD_WAITS = 1_000;

  /**
   * The ledger (docs/api.md §6). Declared here so the set of variables is in one place; their
   * values are checked and read by ledger/ledger-config.ts (the ledger's own slice).
   */
  @IsOptional()
  @IsString()
  LEDGER_DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  LEDGER_RETENTION_DAYS?: string;

  @IsOptional()
  @IsString()
  LEDGER_RESULT_RETENTION_DAYS?: string;

  @IsOptional()
  @IsString()
  LEDGER_DATA_DIR?: string;

  /** Not in the contract's table: `false` when a drainer Deployment writes the entries instead. */
  @IsOptional()
  @IsString()
  LEDGER_DRAIN?: string;

  /** Not in the contract's table: how often refusal counts reach the ledger (1-60 s). */
  @IsOptional()
  @IsString()
  LEDGER_REFUSAL_FLUSH_SECONDS?: string;

  /** Not in the contract's table: inquiries per minute per end user (JWT `sub`); 0 = none. */
  @WholeNumber(0, 1_000_000)
  USER_QUOTA_PER_MINUTE = 60;

  /** Not in the contract's table: how often API_KEYS_FILE and UPSTREAM_*_FILE are re-read (rotation). */
  @WholeNumber(50, 300_000, 'milliseconds')
  SECRET_FILES_POLL_MS = 2000;

  @IsIn(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` })
  LOG_LEVEL = 'info';

  /**
   * Not in the contract's table: the whole request (headers and body) must arrive within this;
   * a slower client is answered 408 and disconnected. Headers alone get min(10 s, this).
   */
  @WholeNumber(100, 300_000, 'milliseconds')
  HTTP_REQUEST_TIMEOUT_MS = 15_000;

  /**
   * Not in the contract's table: how long an idle keep-alive connection stays open. Longer than
   * the idle timeout of the load balancer in front (60 s for AWS ALB and nginx's upstream pools),
   * so the balancer, never the gateway, closes an idle connection: otherwise it may send a request
   * on a connection the gateway is closing and answer its caller 502.
   */
  @WholeNumber(1000, 3_600_000, 'milliseconds')
  HTTP_KEEP_ALIVE_TIMEOUT_MS = 75_000;

  /**
   * Not in the contract's table: web apps' origins allowed to call the inquiry API from a
   * browser, comma-separated, exact (`https://app.example.com`). Unset or empty: CORS off.
   */
  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  /** Not in the contract's table, which only fixes the 16 KiB default (§3, 413). */
  @WholeNumber(1024, 1024 * 1024, 'bytes')
  BODY_LIMIT_BYTES = 16 * 1024;

  /**
   * Not in the contract's table: the commit the image was built from (label of vgw_build_info).
   * `unknown` is the Dockerfile's default and compose's when no hash is passed (docs/operations.md).
   */
  @IsOptional()
  @Matches(/^(?:[0-9a-f]{7,40}|unknown)$/i, { message: 'must be a git commit hash (7 to 40 hex digits) or unknown' })
  BUILD_COMMIT?: string;
}
