import {
  Inject,
  Injectable,
  SetMetadata,
  createParamDecorator,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { Scope } from '../config/app-config.js';
import { noteAuthFailure } from '../observability/http-observability.js';
import { ProblemException } from '../problem/problem.js';
import { API_KEY_HEADER_IN, WWW_AUTHENTICATE_HEADER } from '../vocabulary/headers.js';
import { CALLER_AUTHENTICATORS, UnusableCredential, type Caller, type CallerAuthenticator } from './caller.js';

const REQUIRED_SCOPES = 'vgw:requiredScopes';

/** The scopes a route needs; the guard answers 403 `forbidden` when one is missing. */
export const RequireScopes = (...scopes: Scope[]) => SetMetadata(REQUIRED_SCOPES, scopes);

type AuthenticatedRequest = FastifyRequest & { caller?: Caller };

/** The authenticated caller of the current request (set by CallerAuthGuard). */
export const CurrentCaller = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => {
  const caller = context.switchToHttp().getRequest<AuthenticatedRequest>().caller;
  if (!caller) throw new ProblemException('unauthenticated', 'A valid credential is required.');
  return caller;
});

/**
 * Resolves the caller with the first authenticator whose credential the request carries
 * (API key, JWT, …), then checks the route's scopes. No credential or a bad one: 401;
 * a good one without the scope: 403 (docs/api.md §1).
 */
@Injectable()
export class CallerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(CALLER_AUTHENTICATORS) private readonly authenticators: CallerAuthenticator[],
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const authenticator = this.authenticators.find((a) => a.appliesTo(request.headers));
    if (!authenticator) {
      noteAuthFailure(request, 'missing_credential');
      // No credential of a known kind: every configured scheme is offered.
      throw unauthenticated(
        `A credential is required: X-Api-Key or Authorization: Bearer.${apiKeyAsBearerHint(request.headers)}`,
        this.authenticators.map((a) => a.challenge(false)),
      );
    }
    let caller: Caller | null;
    let detail = 'The credential is not valid.';
    try {
      caller = await authenticator.authenticate(request.headers);
    } catch (error) {
      if (!(error instanceof UnusableCredential)) throw error;
      caller = null;
      detail = error.detail;
    }
    if (!caller) {
      noteAuthFailure(request, request.headers[API_KEY_HEADER_IN] !== undefined ? 'invalid_api_key' : 'invalid_jwt');
      throw unauthenticated(detail + apiKeyAsBearerHint(request.headers), [authenticator.challenge(true)]);
    }
    request.caller = caller;

    const required =
      this.reflector.getAllAndOverride<Scope[] | undefined>(REQUIRED_SCOPES, [
        context.getHandler(),
        context.getClass(),
      ]) ?? [];
    const missing = required.filter((scope) => !caller.scopes.has(scope));
    if (missing.length > 0)
      throw new ProblemException('forbidden', `The credential lacks the scope ${missing.join(', ')}.`);
    return true;
  }
}

/**
 * A bearer token that is not a JWT (three dot-separated parts) and no X-Api-Key: most likely an
 * API key in the wrong header (docs/api.md §1), so the 401 says where it goes.
 */
function apiKeyAsBearerHint(headers: Record<string, string | string[] | undefined>): string {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(String(headers.authorization ?? ''))?.[1];
  if (token === undefined || headers[API_KEY_HEADER_IN] !== undefined || token.split('.').length === 3) return '';
  return ' An API key goes in the X-Api-Key header, not in Authorization: Bearer.';
}

/** 401 with the challenges of RFC 9110 §11.6.1, which requires one on every 401. */
function unauthenticated(detail: string, challenges: string[]): ProblemException {
  return new ProblemException('unauthenticated', detail, {
    headers: { [WWW_AUTHENTICATE_HEADER]: challenges.join(', ') },
  });
}

/** For checks that depend on the body, e.g. `kyc:advanced` for `requestHandlingType: advanced`. */
export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.has(scope)) throw new ProblemException('forbidden', `The credential lacks the scope ${scope}.`);
}
