import { Injectable } from '@nestjs/common';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';
import type { RequestFacts } from '../observability/request-context.js';
import { UpstreamClient, type UpstreamSuccess } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import { TokenProvider } from './token.provider.js';

/**
 * Upstream inquiries with the shared access token, so no caller ever handles a raw token.
 * After a 401 the token is renewed once and the call repeated with the same body and
 * trackId: the upstream rejected the first attempt before registering it (docs/upstream-api.md
 * §5.1 is checked before the trackId is used). No other failure is retried.
 */
@Injectable()
export class AuthorizedUpstream {
  constructor(
    private readonly tokens: TokenProvider,
    private readonly upstream: UpstreamClient,
  ) {}

  /**
   * Throws `TokenUnavailableError` when no token can be had, `UpstreamError` for the call itself.
   * `request`: the facts of the request the inquiry is made for (request-context.ts).
   */
  async inquire(
    operation: InquiryOperation,
    body: Record<string, unknown>,
    request?: RequestFacts,
  ): Promise<UpstreamSuccess> {
    const token = this.tokens.heldAccessToken() ?? (await this.tokens.getAccessToken());
    try {
      return await this.upstream.inquire(operation, body, token, request);
    } catch (error) {
      if (!(error instanceof UpstreamError && error.isUnauthorized)) throw error;
      const renewed = await this.tokens.renewAfterRejection(token);
      return this.upstream.inquire(operation, body, renewed, request);
    }
  }
}
