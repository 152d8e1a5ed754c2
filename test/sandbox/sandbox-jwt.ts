/**
 * The sandbox's JWT caller (docs/local-stack.md, "Sandbox callers"): a key pair generated at each
 * sandbox start, its public key given to the gateway as JWT_PUBLIC_KEY, its private key kept in
 * `.build/` (git-ignored) for `npm run sandbox:jwt` to mint tokens with. A restart makes a new
 * pair, so tokens of an earlier run are refused (401).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8 } from 'jose';

export const SANDBOX_JWT_ISSUER = 'https://sandbox.verification-gateway.invalid/';
export const SANDBOX_JWT_AUDIENCE = 'verification-gateway';
const ALGORITHM = 'ES256';
/** Both scripts run from .build/test/sandbox/: the key sits at .build/sandbox-jwt-signing-key.pem. */
const SIGNING_KEY_FILE = fileURLToPath(new URL('../../sandbox-jwt-signing-key.pem', import.meta.url));

export interface SandboxTokenClaims {
  /** The app (`azp`): the gateway's client id is `jwt:<clientId>`. */
  clientId: string;
  /** The end user (`sub`), required of every JWT caller. */
  subject: string;
  /** Space-separated scopes (`scope`). */
  scope: string;
  /** Lifetime in seconds. */
  lifetimeSeconds: number;
}

export const DEFAULT_TOKEN_CLAIMS: SandboxTokenClaims = {
  clientId: 'sandbox-app',
  subject: 'sandbox-user-1',
  scope: 'kyc:shahkar kyc:iban inquiries:read',
  lifetimeSeconds: 3600,
};

/** A fresh key pair: the private key written for `sandbox:jwt`, the public key's PEM returned. */
export async function createSandboxSigningKey(): Promise<string> {
  const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  mkdirSync(dirname(SIGNING_KEY_FILE), { recursive: true });
  writeFileSync(SIGNING_KEY_FILE, await exportPKCS8(privateKey), { mode: 0o600 });
  return exportSPKI(publicKey);
}

/** A token the running sandbox accepts, signed with the key of its last start. */
export async function mintSandboxToken(claims: SandboxTokenClaims = DEFAULT_TOKEN_CLAIMS): Promise<string> {
  let pem: string;
  try {
    pem = readFileSync(SIGNING_KEY_FILE, 'utf8');
  } catch {
    throw new Error('no sandbox signing key: start the sandbox first (npm run sandbox)');
  }
  return new SignJWT({ scope: claims.scope, azp: claims.clientId })
    .setProtectedHeader({ alg: ALGORITHM })
    .setIssuer(SANDBOX_JWT_ISSUER)
    .setAudience(SANDBOX_JWT_AUDIENCE)
    .setSubject(claims.subject)
    .setIssuedAt()
    .setExpirationTime(`${claims.lifetimeSeconds}s`)
    .sign(await importPKCS8(pem, ALGORITHM));
}
