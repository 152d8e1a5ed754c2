import { createPublicKey, type KeyObject } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { SCOPES, type AppConfig, type Scope } from '../config/app-config.js';
import type { Caller, CallerAuthenticator } from './caller.js';

/** Asymmetric algorithms only: a shared-secret (HS*) or `none` token is never accepted. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Allowed clock difference between the identity provider and us, for exp and nbf. */
const CLOCK_TOLERANCE_SECONDS = 30;

/**
 * `Authorization: Bearer <JWT>` for the company's apps (internal-api.md §1): the signature
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

  constructor(config: ConfigService<AppConfig, true>) {
    const jwt = config.get('callers', { infer: true }).jwt;
    if (!jwt) throw new Error('JwtAuthenticator needs JWT configuration');
    this.settings = jwt;
    this.key = jwt.jwksUrl
      ? createRemoteJWKSet(new URL(jwt.jwksUrl), {
          timeoutDuration: 2000,
          cooldownDuration: 30_000,
          cacheMaxAge: 600_000,
        })
      : createPublicKey(jwt.publicKey!.replace(/\\n/g, '\n'));
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
      // The reason (expired, wrong audience, …) is logged by its code; the token never is.
      const code = error instanceof joseErrors.JOSEError ? error.code : 'ERR_UNKNOWN';
      this.logger.debug(`JWT rejected: ${code}`);
      return null;
    }
    const azp = stringClaim(payload.azp) ?? stringClaim(payload.client_id);
    if (!azp) return null;
    // Fail closed on the end user: records, replays, Idempotency-Keys and the user quota are
    // scoped by `sub`, so a token without a usable one (missing, not a string, empty, over-long
    // or with control characters) would act for every user of its app. It is refused (401).
    const subject = stringClaim(payload.sub);
    if (!subject) {
      this.logger.debug('JWT rejected: no usable sub claim');
      return null;
    }
    // `jwt:` keeps app clients apart from API-key clients (whose ids cannot contain ':'), so
    // no token can claim to be a service and read its inquiries.
    return { clientId: `jwt:${azp}`, scopes: scopesOf(payload), subject, credential: 'jwt' };
  }
}

/** Longest `azp`, `client_id` or `sub` accepted; identity providers use far shorter ids. */
export const MAX_ID_CLAIM_LENGTH = 256;

function stringClaim(value: unknown): string | undefined {
  return typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_ID_CLAIM_LENGTH &&
    // eslint-disable-next-line no-control-regex
    !/[\u0000-\u001f\u007f-\u009f]/.test(value)
    ? value
    : undefined;
}

function scopesOf(payload: JWTPayload): Set<Scope> {
  const raw =
    typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(payload.scp) ? payload.scp : [];
  return new Set(raw.filter((s): s is Scope => (SCOPES as readonly unknown[]).includes(s)));
}
