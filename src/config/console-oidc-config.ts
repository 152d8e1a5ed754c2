/**
 * The console's sign-in slice (docs/operations.md, "Signing in"): `CONSOLE_OIDC_*` name the
 * company's OpenID provider and the console's public client there. Unset: no sign-in, the page
 * asks for an admin API key. Problems name the variable, never a value.
 */

/** The scopes an operator's token may carry; nothing else is ever read from it. */
export const OPERATOR_SCOPES = ['ledger:read', 'ledger:reconcile'] as const;
export type OperatorScope = (typeof OPERATOR_SCOPES)[number];

export interface ConsoleOidcConfig {
  /** The issuer exactly as its tokens' `iss` says; its discovery document is read from under it. */
  issuer: string;
  /** The console's public client: no secret, authorization code with PKCE. */
  clientId: string;
  /** The `aud` an operator's access token must carry (never the apps' JWT_AUDIENCE, never the client id). */
  audience: string;
  /** What the page asks for (space-separated). */
  scope: string;
  /** A claim (dotted path, e.g. `realm_access.roles`) whose values map to scopes. */
  rolesClaim?: string;
  /** Role or group → the scopes it gives. */
  roleScopes: Record<string, OperatorScope[]>;
  /**
   * CONSOLE_OIDC_REQUIRE_AT_JWT=true: only tokens the provider typed `at+jwt` (RFC 9068). Off by
   * default: Keycloak, Entra ID and Okta type access tokens `JWT`. On for a provider that types
   * them and could otherwise let a client named like CONSOLE_OIDC_AUDIENCE obtain an ID token
   * without `nonce` or `at_hash` (decision 0019).
   */
  requireAtJwt: boolean;
}

const DEFAULT_SCOPE = 'openid profile ledger:read ledger:reconcile';
const CLAIM_PATH = /^[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+){0,4}$/;

/** Reads CONSOLE_OIDC_*; undefined when unset or invalid (then `problems` says why). */
export function consoleOidcConfigFrom(
  env: Record<string, string | undefined>,
  appJwt: { issuer: string; audience: string } | undefined,
  problems: string[],
): ConsoleOidcConfig | undefined {
  const issuer = env.CONSOLE_OIDC_ISSUER?.trim() || undefined;
  const clientId = env.CONSOLE_OIDC_CLIENT_ID?.trim() || undefined;
  const audience = env.CONSOLE_OIDC_AUDIENCE?.trim() || undefined;
  if (!issuer && !clientId) {
    for (const other of [
      'CONSOLE_OIDC_AUDIENCE',
      'CONSOLE_OIDC_ROLES_CLAIM',
      'CONSOLE_OIDC_ROLE_SCOPES',
      'CONSOLE_OIDC_REQUIRE_AT_JWT',
    ])
      if (env[other]?.trim()) problems.push(`${other}: needs CONSOLE_OIDC_ISSUER and CONSOLE_OIDC_CLIENT_ID`);
    return undefined;
  }
  const before = problems.length;
  if (!issuer) problems.push('CONSOLE_OIDC_ISSUER: required with CONSOLE_OIDC_CLIENT_ID');
  else if (!isIssuerUrl(issuer))
    problems.push('CONSOLE_OIDC_ISSUER: must be an https URL (http only on localhost), without query or fragment');
  if (!clientId) problems.push('CONSOLE_OIDC_CLIENT_ID: required with CONSOLE_OIDC_ISSUER');
  if (!audience)
    problems.push('CONSOLE_OIDC_AUDIENCE: required with CONSOLE_OIDC_ISSUER (the aud of operators’ access tokens)');
  // An ID token's aud is the client id: were it the audience too, an ID token would pass as an access token.
  else if (audience === clientId)
    problems.push(
      'CONSOLE_OIDC_AUDIENCE: must differ from CONSOLE_OIDC_CLIENT_ID (an ID token would pass as an access token)',
    );
  // An app's end-user token and an operator's must never be taken for each other (docs/api.md §7).
  if (appJwt && issuer && audience && sameIssuer(appJwt.issuer, issuer) && appJwt.audience === audience)
    problems.push(
      'CONSOLE_OIDC_AUDIENCE: must differ from JWT_AUDIENCE when both share an issuer (an app’s token would open the console)',
    );
  const scope = env.CONSOLE_OIDC_SCOPE?.trim() || DEFAULT_SCOPE;
  if (!/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(scope) || !scope.split(' ').includes('openid'))
    problems.push('CONSOLE_OIDC_SCOPE: must be space-separated scope tokens including openid');
  const rolesClaim = env.CONSOLE_OIDC_ROLES_CLAIM?.trim() || undefined;
  if (rolesClaim !== undefined && !CLAIM_PATH.test(rolesClaim))
    problems.push('CONSOLE_OIDC_ROLES_CLAIM: must be a claim name or a dotted path of at most 5 names');
  const roleScopes = parseRoleScopes(env.CONSOLE_OIDC_ROLE_SCOPES, problems);
  if (Object.keys(roleScopes).length > 0 && !rolesClaim)
    problems.push('CONSOLE_OIDC_ROLE_SCOPES: needs CONSOLE_OIDC_ROLES_CLAIM (the claim the roles are read from)');
  if (rolesClaim && !env.CONSOLE_OIDC_ROLE_SCOPES?.trim())
    problems.push('CONSOLE_OIDC_ROLE_SCOPES: required with CONSOLE_OIDC_ROLES_CLAIM (role=scope,…)');
  const requireAtJwt = env.CONSOLE_OIDC_REQUIRE_AT_JWT?.trim() || 'false';
  if (requireAtJwt !== 'true' && requireAtJwt !== 'false')
    problems.push('CONSOLE_OIDC_REQUIRE_AT_JWT: must be true or false');
  if (problems.length > before) return undefined;
  return {
    issuer: issuer!,
    clientId: clientId!,
    audience: audience!,
    scope,
    ...(rolesClaim ? { rolesClaim } : {}),
    roleScopes,
    requireAtJwt: requireAtJwt === 'true',
  };
}

/** `finance=ledger:read,finance=ledger:reconcile,support=ledger:read`: a role may repeat. */
function parseRoleScopes(raw: string | undefined, problems: string[]): Record<string, OperatorScope[]> {
  const mapped: Record<string, OperatorScope[]> = Object.create(null) as Record<string, OperatorScope[]>;
  if (raw === undefined || raw.trim() === '') return mapped;
  for (const [index, pair] of raw.split(',').entries()) {
    const match = /^\s*([^=\s][^=]{0,127})=\s*(\S+)\s*$/.exec(pair);
    const scope = match?.[2];
    if (!match || !(OPERATOR_SCOPES as readonly string[]).includes(scope!)) {
      problems.push(`CONSOLE_OIDC_ROLE_SCOPES: entry ${index + 1} must be role=${OPERATOR_SCOPES.join(' or role=')}`);
      continue;
    }
    const role = match[1].trim();
    (mapped[role] ??= []).push(scope as OperatorScope);
  }
  return mapped;
}

function isIssuerUrl(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.search || url.hash || url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

/** Issuers compared as identifiers, but a trailing slash is a common slip between two settings. */
function sameIssuer(a: string, b: string): boolean {
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}
