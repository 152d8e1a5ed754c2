import { Injectable } from '@nestjs/common';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';
import type { RequestFacts } from '../observability/request-context.js';
import { UpstreamClient, type UpstreamSuccess } from '../upstream/upstream.client.js';
import { UpstreamError } from '../upstream/upstream-error.js';
import { TokenProvider } from './token.provider.js';

/**
 * How long an inquiry's upstream work may take: each call's own deadline, and the epoch ms by
 * which all of it (waiting for a token, the call, the repeat after a 401) is over. Nothing is
 * sent after `deadline`, and no call outlives it, so a record still `pending` past it belongs
 * to a process that died (docs/behaviour.md, "Asynchronous answers").
 */
export interface CallBudget {
  callTimeoutMs: number;
  deadline: number;
}

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
   * Throws `TokenUnavailableError` when no token can be had, `UpstreamError` for the call itself
   * (`not_sent` when the budget ran out before a call could start). `request`: the facts of the
   * request the inquiry is made for (request-context.ts).
   */
  async inquire(
    operation: InquiryOperation,
    body: Record<string, unknown>,
    budget: CallBudget,
    request?: RequestFacts,
  ): Promise<UpstreamSuccess> {
    const token = this.tokens.heldAccessToken() ?? (await this.tokens.getAccessToken());
    try {
      return await this.upstream.inquire(operation, body, token, request, timeLeft(budget));
    } catch (error) {
      if (!(error instanceof UpstreamError && error.isUnauthorized)) throw error;
      const renewed = await this.tokens.renewAfterRejection(token);
      return this.upstream.inquire(operation, body, renewed, request, timeLeft(budget));
    }
  }
}

/** The next call's deadline: its own, cut to what is left of the budget; none left: not sent. */
function timeLeft({ callTimeoutMs, deadline }: CallBudget): number {
  const left = deadline - Date.now();
  if (left <= 0) throw new UpstreamError('not_sent', { timedOut: true });
  return Math.min(callTimeoutMs, left);
}
