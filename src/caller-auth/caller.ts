import type { Scope } from '../config/app-config.js';
import { sha256 } from '../crypto/sha256.js';

/** Whoever called the gateway, after authentication (docs/api.md §1). */
export interface Caller {
  /** The client: a configured API key's clientId, or a JWT's `azp` / `client_id`. */
  clientId: string;
  scopes: ReadonlySet<Scope>;
  /** The end user (`sub`) when the caller is an app acting for a person. */
  subject?: string;
  /** A JWT's `iss` (verified): a `sub` is unique only within its issuer. */
  issuer?: string;
  credential: 'api_key' | 'jwt' | 'operator';
  /** A person signed in to the console (credential `operator`): who they are, for the record of who did what. */
  operator?: { subject: string; name?: string };
  /** Inquiries per minute allowed to this client, when it has a quota. */
  quotaPerMinute?: number;
}

/** One way of proving who is calling. The guard asks each in turn. */
export interface CallerAuthenticator {
  /** True when the request carries this kind of credential at all. */
  appliesTo(headers: Record<string, string | string[] | undefined>): boolean;
  /** The caller, or null when the credential is present but not valid. */
  authenticate(headers: Record<string, string | string[] | undefined>): Promise<Caller | null>;
  /**
   * This scheme's `WWW-Authenticate` challenge (RFC 9110 §11.6.1), sent on every 401: `invalid`
   * when a credential of this kind was presented and rejected (RFC 6750 §3.1 `invalid_token`).
   */
  challenge(invalid: boolean): string;
}

/**
 * Thrown by an authenticator for a credential that verifies but cannot be used, with a detail
 * saying why (never the offending value): the guard answers 401 with it, as for a bad credential.
 */
export class UnusableCredential extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'UnusableCredential';
  }
}

/** The realm every challenge names. */
export const AUTH_REALM = 'verification-gateway';

export const CALLER_AUTHENTICATORS = Symbol('CALLER_AUTHENTICATORS');

/**
 * The caller's scope as one unambiguous string: the client id with its length in front, then
 * the hashed end user, if any (a `sub` may be personal data and the scope ends up in Redis key
 * names). Joining ids with a separator is not enough: a JWT `azp` is free text and may contain
 * any separator, so `("a:u:x", none)` and `("a", user x)` could meet. With the length in front
 * the client id's end is known, so no two different (client, user) pairs share a scope.
 */
export function callerScope(
  caller: Pick<Caller, 'clientId' | 'subject'>,
  subjectHash: (subject: string) => string = sha256,
): string {
  const client = `${caller.clientId.length}:${caller.clientId}`;
  return caller.subject === undefined ? client : `${client}:u:${subjectHash(caller.subject).slice(0, 32)}`;
}

/**
 * The caller's scope under each of the given hashes of its end user (SubjectHasher.claimHashes
 * or formerHashes), each once; a caller without an end user has its client's scope alone.
 */
export function callerScopes(caller: Pick<Caller, 'clientId' | 'subject'>, hashes: readonly string[]): string[] {
  if (caller.subject === undefined) return [callerScope(caller)];
  return [...new Set(hashes.map((hash) => callerScope(caller, () => hash)))];
}
