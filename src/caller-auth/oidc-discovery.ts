import { Logger } from '@nestjs/common';
import { describeFailure } from './jwks-key-source.js';

/** The provider's OidcDiscovery, or null when CONSOLE_OIDC_ISSUER is unset. */
export const OIDC_DISCOVERY = Symbol('OIDC_DISCOVERY');

/** What the console and the operator-token check take from the issuer's discovery document. */
export interface OidcEndpoints {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  endSessionEndpoint?: string;
  jwksUri: string;
}

/** A document read counts as current this long; a failed read is retried no sooner than RETRY_MS. */
const FRESH_MS = 3_600_000;
const RETRY_MS = 5_000;
const TIMEOUT_MS = 2_000;
const MAX_BYTES = 64 * 1024;

/**
 * `{issuer}/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4), read when first
 * needed and kept an hour. A provider that is down is not a start-up failure: `current()` answers
 * undefined and the console offers the break-glass key; the last good document is kept meanwhile.
 */
export class OidcDiscovery {
  private readonly logger = new Logger('ConsoleSignIn');
  private endpoints?: OidcEndpoints;
  private readAt = Number.NEGATIVE_INFINITY;
  private failedAt = Number.NEGATIVE_INFINITY;
  private pending?: Promise<void>;

  constructor(
    private readonly issuer: string,
    private readonly fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  /** The endpoints, or undefined when the provider has not been reachable yet. */
  async current(): Promise<OidcEndpoints | undefined> {
    const due = this.now() - this.readAt >= FRESH_MS && this.now() - this.failedAt >= RETRY_MS;
    if (due) await (this.pending ??= this.read().finally(() => (this.pending = undefined)));
    return this.endpoints;
  }

  private async read(): Promise<void> {
    const url = `${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    try {
      const response = await this.fetchImpl(url, {
        signal: AbortSignal.timeout(TIMEOUT_MS),
        redirect: 'error',
        headers: { accept: 'application/json' },
      });
      if (!response.ok) throw new Error(`status ${response.status}`);
      const text = await response.text();
      if (text.length > MAX_BYTES) throw new Error('document too large');
      this.endpoints = endpointsOf(JSON.parse(text) as Record<string, unknown>, this.issuer);
      this.readAt = this.now();
      this.failedAt = Number.NEGATIVE_INFINITY;
    } catch (error) {
      this.failedAt = this.now();
      const reason =
        error instanceof Error && error.message.startsWith('discovery:') ? error.message : describeFailure(error);
      this.logger.warn(
        `The identity provider's discovery document cannot be read (${reason}): the console offers the API key`,
      );
    }
  }
}

/** The document's endpoints; its `issuer` must be the configured one exactly (§4.3: no mix-up). */
function endpointsOf(document: Record<string, unknown>, issuer: string): OidcEndpoints {
  if (document.issuer !== issuer) throw new Error('discovery: its issuer is not CONSOLE_OIDC_ISSUER');
  const url = (name: string, required: boolean): string | undefined => {
    const value = document[name];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || !isEndpoint(value)) throw new Error(`discovery: ${name} is not an https URL`);
    return value;
  };
  const endSession = url('end_session_endpoint', false);
  return {
    issuer,
    authorizationEndpoint: url('authorization_endpoint', true)!,
    tokenEndpoint: url('token_endpoint', true)!,
    jwksUri: url('jwks_uri', true)!,
    ...(endSession ? { endSessionEndpoint: endSession } : {}),
  };
}

function isEndpoint(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname))
    );
  } catch {
    return false;
  }
}
