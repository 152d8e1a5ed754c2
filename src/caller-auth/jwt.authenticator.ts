import { createPublicKey, type KeyObject } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { Counter, Gauge } from 'prom-client';
import { isScope, type AppConfig, type Scope } from '../config/app-config.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { ProblemException } from '../problem/problem.js';
import { AUTH_REALM, UnusableCredential, type Caller, type CallerAuthenticator } from './caller.js';
import { JwksKeySource, JwksUnavailableError, describeFailure, type JwksState } from './jwks-key-source.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';

/** Asymmetric algorithms only: a shared-secret (HS*) or `none` token is never accepted. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Allowed clock difference between the identity provider and us, for exp and nbf. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** JWKS fetching: keys count as current for 10 min; a failed fetch is retried after 5 s at the earliest. */
const JWKS_CACHE_MS = 600_000;
const JWKS_RETRY_MS = 5_000;
const JWKS_TIMEOUT_MS = 2_000;
const JWKS_COOLDOWN_MS = 30_000;
const JWKS_STATES: JwksState[] = ['ok', 'stale', 'unavailable'];

/**
 * `Authorization: Bearer <JWT>` for the company's apps (docs/api.md §1): the signature
 * is checked against the JWKS URL (keys cached and refreshed by jose) or the configured
 * public key, plus `iss`, `aud`, `exp` and `nbf`. Scopes come from `scope` (space-separated)
 * or `scp` (array), the client from `azp` or `client_id`, the end user from `sub`, which is
 * required: a JWT caller is always an app acting for one end user.
 */
@Injectable()
export class JwtAuthenticator implements CallerAuthenticator {
  private readonly logger = new Logger(JwtAuthenticator.name);
  private readonly settings: NonNullable<AppConfig['callers']['jwt']>;
  private readonly key: KeyObject | JWTVerifyGetKey;
  private readonly refusedUnavailable?: Counter;

  constructor(config: ConfigService<AppConfig, true>, metrics?: GatewayMetrics) {
    const jwt = config.get('callers', { infer: true }).jwt;
    if (!jwt) throw new Error('JwtAuthenticator needs JWT configuration');
    this.settings = jwt;
    if (!jwt.jwksUrl) {
      // Checked at startup (config/caller-config.ts): a malformed key is a configuration error (exit 78).
      this.key = createPublicKey(jwt.publicKey!);
      return;
    }
    const registers = metrics ? [metrics.registry] : [];
    const stateGauge = new Gauge({
      name: 'vgw_jwks_state',
      help: '1 for the current state of the JWKS keys: ok, stale (IdP unreachable, last keys in use) or unavailable',
      labelNames: ['state'] as const,
      registers,
    });
    this.refusedUnavailable = new Counter({
      name: 'vgw_jwt_auth_unavailable_total',
      help: 'JWT requests answered 503 auth_unavailable because no verification key could be had',
      registers,
    });
    const source = new JwksKeySource(new URL(jwt.jwksUrl), {
      cacheMs: JWKS_CACHE_MS,
      maxStaleMs: jwt.jwksMaxStaleSeconds * 1000,
      retryMs: JWKS_RETRY_MS,
      timeoutMs: JWKS_TIMEOUT_MS,
      cooldownMs: JWKS_COOLDOWN_MS,
      onStateChange: (state, previous, cause) => {
        for (const s of JWKS_STATES) stateGauge.set({ state: s }, s === state ? 1 : 0);
        this.logStateChange(state, previous, cause);
      },
    });
    new Gauge({
      name: 'vgw_jwks_keys_age_seconds',
      help: 'Age of the JWKS keys in use (grows past the 600 s refresh while the IdP is unreachable)',
      registers,
      collect() {
        const age = source.keysAgeSeconds;
        if (age !== undefined) this.set(age);
      },
    });
    this.key = source.getKey;
  }

  /** One line per state change (never per request): warn while degraded, error when nothing can be checked. */
  private logStateChange(state: JwksState, previous: JwksState | 'initial', cause: unknown): void {
    const staleLimit = `${this.settings.jwksMaxStaleSeconds} s past the ${JWKS_CACHE_MS / 1000} s refresh`;
    if (state === 'ok') {
      if (previous !== 'initial') this.logger.log('JWKS reachable again: JWT verification keys are current');
    } else if (state === 'stale') {
      this.logger.warn(
        `JWKS unreachable (${describeFailure(cause)}): verifying JWTs with the last keys fetched, for at most ${staleLimit}`,
      );
    } else {
      this.logger.error(
        `JWKS unreachable (${describeFailure(cause)}) and no usable keys: JWT callers get 503 auth_unavailable`,
      );
    }
  }

  challenge(invalid: boolean): string {
    return `Bearer realm="${AUTH_REALM}"${invalid ? ', error="invalid_token"' : ''}`;
  }

  appliesTo(headers: Record<string, string | string[] | undefined>): boolean {
    const authorization = headers.authorization;
    return typeof authorization === 'string' && /^Bearer\s+/i.test(authorization);
  }

  async authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null> {
    const token = (headers.authorization as string).replace(/^Bearer\s+/i, '').trim();
    if (token.length === 0 || token.length > 8192) return null;
    let payload: JWTPayload;
    try {
      const options = {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp'],
      };
      ({ payload } =
        typeof (this.key as KeyObject).type === 'string'
          ? await jwtVerify(token, this.key as KeyObject, options)
          : await jwtVerify(token, this.key as JWTVerifyGetKey, options));
    } catch (error) {
      if (error instanceof JwksUnavailableError) {
        // "We cannot check tokens right now", not "your token is bad": a retry can succeed.
        this.refusedUnavailable?.inc();
        throw new ProblemException('auth_unavailable', 'Credentials cannot be checked right now; retry later.', {
          headers: { [RETRY_AFTER_HEADER]: String(JWKS_RETRY_MS / 1000) },
        });
      }
      // The reason (expired, wrong audience, …) is logged by its code; the token never is.
      const code = error instanceof joseErrors.JOSEError ? error.code : 'ERR_UNKNOWN';
      this.logger.debug(`JWT rejected: ${code}`);
      return null;
    }
    // The client and the end user end up in records, Redis keys and the ledger (PostgreSQL
    // refuses a lone surrogate or a NUL in text: such an entry was once a batch that never
    // wrote). An unusable one is refused here with a detail naming the claim, never its value.
    const azp = idClaim(payload, payload.azp !== undefined ? 'azp' : 'client_id');
    // Fail closed on the end user: records, replays, Idempotency-Keys and the user quota are
    // scoped by `sub`, so a token without a usable one (missing, not a string, empty, over-long
    // or with control characters) would act for every user of its app. It is refused (401).
    const subject = idClaim(payload, 'sub');
    // `jwt:` keeps app clients apart from API-key clients (whose ids cannot contain ':'), so
    // no token can claim to be a service and read its inquiries.
    // `iss` was checked against JWT_ISSUER: it names whose `sub` this is (reuse partitions, docs/api.md §2).
    const issuer = typeof payload.iss === 'string' ? payload.iss : undefined;
    return {
      clientId: `jwt:${azp}`,
      scopes: scopesOf(payload),
      subject,
      credential: 'jwt',
      ...(issuer ? { issuer } : {}),
    };
  }
}

/** Longest `azp`, `client_id` or `sub` accepted; identity providers use far shorter ids. */
export const MAX_ID_CLAIM_LENGTH = 256;

/** C0 and C1 controls (NUL among them) and lone UTF-16 surrogates: what no id may hold. */
const UNUSABLE_ID =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The claim as an id: a string of 1 to 256 characters with no control character or lone surrogate. */
export function isUsableId(value: unknown): value is string {
  return (
    typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_CLAIM_LENGTH && !UNUSABLE_ID.test(value)
  );
}

/** The claim `name` when usable as an id; else 401 naming the claim and the rule (never the value). */
function idClaim(payload: JWTPayload, name: 'azp' | 'client_id' | 'sub'): string {
  const value = payload[name];
  if (isUsableId(value)) return value;
  throw new UnusableCredential(
    value === undefined
      ? `The token has no ${name === 'sub' ? 'sub' : 'azp or client_id'} claim.`
      : `The token's ${name} claim is not a usable id: a string of 1 to ${MAX_ID_CLAIM_LENGTH} characters without control characters or lone UTF-16 surrogates.`,
  );
}

function scopesOf(payload: JWTPayload): Set<Scope> {
  const raw =
    typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(payload.scp) ? payload.scp : [];
  // An end user's token never opens the administration routes (docs/api.md §7: API keys and operators' tokens).
  return new Set(raw.filter((s): s is Scope => isScope(s) && !s.startsWith('ledger:')));
}
