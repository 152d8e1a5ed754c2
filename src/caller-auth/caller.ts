import type { Scope } from '../config/app-config.js';

/** Whoever called the gateway, after authentication (internal-api.md §1). */
export interface Caller {
  /** The client: a configured API key's clientId, or a JWT's `azp` / `client_id`. */
  clientId: string;
  scopes: ReadonlySet<Scope>;
  /** The end user (`sub`) when the caller is an app acting for a person. */
  subject?: string;
  credential: 'api_key' | 'jwt';
  /** Inquiries per minute allowed to this client, when it has a quota. */
  quotaPerMinute?: number;
}

/** One way of proving who is calling. The guard asks each in turn. */
export interface CallerAuthenticator {
  /** True when the request carries this kind of credential at all. */
  appliesTo(headers: Record<string, string | string[] | undefined>): boolean;
  /** The caller, or null when the credential is present but not valid. */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null>;
}

export const CALLER_AUTHENTICATORS = Symbol('CALLER_AUTHENTICATORS');
