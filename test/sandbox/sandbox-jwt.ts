/**
 * The sandbox's JWT caller (docs/local-stack.md, "Sandbox callers"): a key pair generated at each
 * sandbox start, its public key given to the gateway as JWT_PUBLIC_KEY, its private key kept in
 * `.build/` (git-ignored) for `npm run sandbox:jwt` to mint tokens with: one file per gateway
 * port, so sandboxes on other ports keep theirs, removed when the sandbox stops, so no token is
 * minted for a sandbox that no longer runs. A restart makes a new pair, so tokens of an earlier
 * run are refused (401).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SignJWT, exportPKCS8, exportSPKI, generateKeyPair, importPKCS8 } from 'jose';

export const SANDBOX_JWT_ISSUER = 'https://sandbox.verification-gateway.invalid/';
export const SANDBOX_JWT_AUDIENCE = 'verification-gateway';
const ALGORITHM = 'ES256';
/** Both scripts run from .build/test/sandbox/: the key sits at .build/sandbox-jwt-signing-key-<port>.pem. */
function signingKeyFile(port: number): string {
  return fileURLToPath(new URL(`../../sandbox-jwt-signing-key-${port}.pem`, import.meta.url));
}

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

/** A sandbox's key pair: the public key's PEM for the gateway, the private key for `sandbox:jwt`. */
export interface SandboxSigningKey {
  publicKeyPem: string;
  /** Writes the private key for the gateway on `port` (once it listens there). */
  publish(port: number): Promise<void>;
  /** Removes the file `publish` wrote (the sandbox stops). */
  withdraw(): void;
}

export async function createSandboxSigningKey(): Promise<SandboxSigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  let written: string | undefined;
  return {
    publicKeyPem: await exportSPKI(publicKey),
    async publish(port: number) {
      written = signingKeyFile(port);
      mkdirSync(dirname(written), { recursive: true });
      writeFileSync(written, await exportPKCS8(privateKey), { mode: 0o600 });
    },
    withdraw() {
      if (written !== undefined) rmSync(written, { force: true });
    },
  };
}

/** A token the sandbox running on `port` accepts, signed with the key of its start. */
export async function mintSandboxToken(
  port: number,
  claims: SandboxTokenClaims = DEFAULT_TOKEN_CLAIMS,
): Promise<string> {
  let pem: string;
  try {
    pem = readFileSync(signingKeyFile(port), 'utf8');
  } catch {
    throw new Error(`no sandbox signing key for port ${port}: start the sandbox first (npm run sandbox)`);
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
