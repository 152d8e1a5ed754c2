/**
 * An app's end user as the Idempotency-Key e2e specs drive it: RS256 JWTs of one `sub` from the
 * `mobile-app` client (scope `kyc:shahkar`), and keyed Shahkar inquiries with them.
 */
import { SignJWT, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { SHAHKAR } from './fixtures.js';

const ISSUER = 'https://id.example.test';
const AUDIENCE = 'verification-gateway';

/** What a keyed inquiry was answered. */
export interface EndUserAnswer {
  status: number;
  /** The `Idempotent-Replayed` header. */
  replayed: string | null;
  body: { trackId: string; code?: string };
}

export class EndUser {
  private constructor(
    readonly subject: string,
    private readonly keys: { privateKey: CryptoKey; publicKey: CryptoKey },
  ) {}

  static async create(subject: string): Promise<EndUser> {
    return new EndUser(subject, await generateKeyPair('RS256', { extractable: true }));
  }

  /** The gateway's settings that accept this user's tokens. */
  async gatewayEnv(): Promise<Record<string, string>> {
    return { JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_PUBLIC_KEY: await exportSPKI(this.keys.publicKey) };
  }

  token(): Promise<string> {
    return new SignJWT({ azp: 'mobile-app', scope: 'kyc:shahkar' })
      .setProtectedHeader({ alg: 'RS256' })
      .setSubject(this.subject)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(this.keys.privateKey);
  }

  /** A Shahkar inquiry (`body`, by default the fixture's) under Idempotency-Key `key`. */
  async inquire(gateway: { url: string }, key: string, body: unknown = SHAHKAR): Promise<EndUserAnswer> {
    const res = await fetch(`${gateway.url}/v1/kyc/shahkar`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await this.token()}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      replayed: res.headers.get('idempotent-replayed'),
      body: (await res.json()) as EndUserAnswer['body'],
    };
  }
}
