import { createPublicKey } from 'node:crypto';
import { SCOPES, isScope, type ApiKeyEntry, type AppConfig } from './app-config.js';
import type { EnvironmentVariables } from './environment.js';

// The callers' slice of the configuration: API keys (API_KEYS) and JWT verification (JWT_*).

/**
 * Parses an API_KEYS document; problems are pushed by entry and field, never quoting a value. An
 * operation's scope must name an operation of the catalog (`operations`, docs/api.md §10).
 */
export function parseApiKeys(
  raw: string | undefined,
  operations: readonly string[],
  problems: string[],
): ApiKeyEntry[] {
  const known = (scope: unknown) =>
    isScope(scope) && (!scope.startsWith('kyc:') || scope === 'kyc:advanced' || operations.includes(scope.slice(4)));
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
    if (!Array.isArray(scopes) || !scopes.every(known)) {
      problems.push(`${where}.scopes: must be an array of ${SCOPES.join(', ')} or kyc:<an operation of the catalog>`);
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

export function jwtConfig(vars: EnvironmentVariables, problems: string[]): AppConfig['callers']['jwt'] {
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
