import { Logger } from '@nestjs/common';
import { decodeJwt, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { OPERATOR_SCOPES, type ConsoleOidcConfig, type OperatorScope } from '../config/console-oidc-config.js';
import { ProblemException } from '../problem/problem.js';
import { RETRY_AFTER_HEADER } from '../vocabulary/headers.js';
import { AUTH_REALM, UnusableCredential, type Caller, type CallerAuthenticator } from './caller.js';
import { JwksKeySource, JwksUnavailableError } from './jwks-key-source.js';
import { isUsableId } from './jwt.authenticator.js';
import type { OidcDiscovery } from './oidc-discovery.js';

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const CLOCK_TOLERANCE_SECONDS = 30;
const RETRY_SECONDS = 5;

/**
 * `Authorization: Bearer <access token>` from the console's sign-in (docs/api.md §7): verified
 * against the operators' issuer's JWKS (from its discovery document) with `iss`, `aud`
 * (CONSOLE_OIDC_AUDIENCE) and `exp`. It answers only for tokens whose unverified `iss` and `aud`
 * say they are operators' (or for every bearer token when no app JWTs are configured); the apps'
 * JwtAuthenticator takes the rest and never grants `ledger:*`, so neither kind passes as the other.
 * Scopes: `ledger:read` / `ledger:reconcile` from `scope` / `scp`, or from the roles claim mapped.
 */
export class OperatorTokenAuthenticator implements CallerAuthenticator {
  private readonly logger = new Logger('OperatorTokens');
  private keys?: JwksKeySource;

  constructor(
    private readonly settings: ConsoleOidcConfig,
    private readonly discovery: OidcDiscovery,
    /** With app JWTs configured, only tokens addressed to the console are this authenticator's. */
    private readonly appJwtsConfigured: boolean,
  ) {}

  challenge(invalid: boolean): string {
    return `Bearer realm="${AUTH_REALM}"${invalid ? ', error="invalid_token"' : ''}`;
  }

  appliesTo(headers: Record<string, string | string[] | undefined>): boolean {
    const token = bearer(headers);
    if (token === undefined) return false;
    if (!this.appJwtsConfigured) return true;
    try {
      // Routing only, before any check: the verification below decides.
      const claims = decodeJwt(token);
      return claims.iss === this.settings.issuer && audiencesOf(claims).includes(this.settings.audience);
    } catch {
      return false;
    }
  }

  async authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null> {
    const token = bearer(headers);
    if (token === undefined || token.length === 0 || token.length > 8192) return null;
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      const keys = await this.keySource();
      ({
        payload,
        protectedHeader: { typ },
      } = await jwtVerify(token, keys.getKey, {
        issuer: this.settings.issuer,
        audience: this.settings.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'sub'],
        // jose compares it as RFC 8725 says (case-insensitive, `application/` optional).
        ...(this.settings.requireAtJwt ? { typ: 'at+jwt' } : {}),
      }));
    } catch (error) {
      if (error instanceof JwksUnavailableError)
        throw new ProblemException('auth_unavailable', 'Operator tokens cannot be checked right now; retry later.', {
          headers: { [RETRY_AFTER_HEADER]: String(RETRY_SECONDS) },
        });
      this.logger.debug(
        `Operator token rejected: ${error instanceof joseErrors.JOSEError ? error.code : 'ERR_UNKNOWN'}`,
      );
      return null;
    }
    if (isIdToken(payload, typ, this.settings.clientId)) {
      this.logger.debug('Operator token rejected: an ID token');
      return null;
    }
    if (!isUsableId(payload.sub)) throw new UnusableCredential("The token's sub claim is not a usable id.");
    const name = [payload.name, payload.preferred_username].find(isUsableId);
    return {
      clientId: `operator:${payload.sub}`,
      scopes: operatorScopes(payload, this.settings),
      credential: 'operator',
      operator: { subject: payload.sub, ...(name !== undefined ? { name } : {}) },
    };
  }

  /** The JWKS named by the discovery document, built once it has been read. */
  private async keySource(): Promise<JwksKeySource> {
    if (this.keys) return this.keys;
    const endpoints = await this.discovery.current();
    if (!endpoints) throw new JwksUnavailableError();
    this.keys = new JwksKeySource(new URL(endpoints.jwksUri), {
      cacheMs: 600_000,
      maxStaleMs: 3_600_000,
      retryMs: 5_000,
      timeoutMs: 2_000,
      cooldownMs: 30_000,
    });
    return this.keys;
  }
}

/** Claims OpenID Connect defines for ID tokens only (Core §2, §3.1.3.6, §3.3.2.11). */
const ID_TOKEN_CLAIMS = ['nonce', 'at_hash', 'c_hash'] as const;

/**
 * An ID token sent as an access token: it proves a sign-in to the client, not a grant to this API.
 * The audience rule refuses the usual one (its `aud` is the client id, which config refuses as
 * CONSOLE_OIDC_AUDIENCE); a provider may list both audiences, so a token addressed to the
 * console's client id, or carrying an ID-token-only claim, is refused too, unless the provider
 * typed it an access token (RFC 9068 `at+jwt`). Not the claims alone: `nonce` and `at_hash` are
 * both optional in the code flow's ID token. `typ` alone is not required: several providers type
 * their access tokens `JWT`.
 */
function isIdToken(payload: JWTPayload, typ: string | undefined, clientId: string): boolean {
  if (typ !== undefined && /^(application\/)?at\+jwt$/i.test(typ)) return false;
  return audiencesOf(payload).includes(clientId) || ID_TOKEN_CLAIMS.some((claim) => payload[claim] !== undefined);
}

/** `aud` as a list: a string or an array (RFC 7519 §4.1.3). */
const audiencesOf = (claims: JWTPayload): (string | undefined)[] =>
  Array.isArray(claims.aud) ? claims.aud : [claims.aud];

function bearer(headers: Record<string, string | string[] | undefined>): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization !== 'string' || !/^Bearer\s+/i.test(authorization)) return undefined;
  return authorization.replace(/^Bearer\s+/i, '').trim();
}

/** Only `ledger:read` and `ledger:reconcile`, whatever else the token says. */
export function operatorScopes(payload: JWTPayload, settings: Pick<ConsoleOidcConfig, 'rolesClaim' | 'roleScopes'>) {
  const granted = new Set<OperatorScope>();
  const raw: unknown[] =
    typeof payload.scope === 'string' ? payload.scope.split(' ') : Array.isArray(payload.scp) ? payload.scp : [];
  for (const scope of raw) if (isOperatorScope(scope)) granted.add(scope);
  if (settings.rolesClaim) {
    let value: unknown = payload;
    for (const part of settings.rolesClaim.split('.'))
      value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
    const roles = typeof value === 'string' ? value.split(' ') : Array.isArray(value) ? value : [];
    for (const role of roles) {
      if (typeof role !== 'string' || !Object.hasOwn(settings.roleScopes, role)) continue;
      for (const scope of settings.roleScopes[role]) granted.add(scope);
    }
  }
  return granted;
}

const isOperatorScope = (value: unknown): value is OperatorScope =>
  (OPERATOR_SCOPES as readonly unknown[]).includes(value);
