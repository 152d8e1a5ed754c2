/**
 * The little of `oidc-provider` (a dev dependency without its own types) that
 * test/console-sign-in.e2e.spec.ts uses.
 */
declare module 'oidc-provider' {
  import type { Server } from 'node:http';

  export interface OidcClient {
    clientId: string;
    grantTypeAllowed(type: string): boolean;
  }

  export interface OidcGrant {
    addOIDCScope(scope: string): void;
    addResourceScope(resource: string, scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    save(): Promise<string>;
  }

  export interface KoaContextWithOIDC {
    oidc: {
      provider: Provider;
      client?: OidcClient;
      session?: { accountId?: string };
    };
  }

  export interface OidcAccount {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  export interface Configuration {
    clients?: Array<Record<string, unknown>>;
    jwks?: { keys: Array<Record<string, unknown>> };
    cookies?: { keys: string[] };
    claims?: Record<string, string[]>;
    findAccount?: (ctx: KoaContextWithOIDC, id: string) => OidcAccount | Promise<OidcAccount | undefined>;
    features?: Record<string, Record<string, unknown>>;
    issueRefreshToken?: (ctx: KoaContextWithOIDC, client: OidcClient, code: unknown) => boolean | Promise<boolean>;
    extraTokenClaims?: (ctx: KoaContextWithOIDC, token: unknown) => Record<string, unknown> | undefined;
    loadExistingGrant?: (ctx: KoaContextWithOIDC) => Promise<OidcGrant | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    Grant: new (properties: { clientId: string; accountId: string }) => OidcGrant;
    listen(port: number, host?: string): Server;
  }
}
