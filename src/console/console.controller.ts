import { Controller, Get, Inject, Param, Res, UseGuards } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { ApiExcludeController, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import type { Caller } from '../caller-auth/caller.js';
import { OIDC_DISCOVERY, type OidcDiscovery } from '../caller-auth/oidc-discovery.js';
import type { AppConfig } from '../config/app-config.js';
import { API_KEY_SCHEME } from '../openapi.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { ProblemException } from '../problem/problem.js';
import { ConsoleAssets, consoleCsp } from './console-assets.js';
import { GatewayStatusReader, type GatewayStatus } from './gateway-status.js';
import { GatewayStatusSchema, OperatorSchema } from './gateway-status.openapi.js';
import { operatorOnly } from '../ledger/admin.controller.js';
import { operatorOf } from '../ledger/operator-actions.js';

/**
 * `GET /console` and its files (docs/api.md §4, docs/operations.md "The console"): the page needs
 * no credential; every figure it shows comes from the authenticated admin routes, called with
 * the operator's access token (sign-in) or the break-glass key. Bound to the ops listener when
 * OPS_PORT is set.
 */
@Controller('console')
@ApiExcludeController()
export class ConsoleController {
  private readonly oidc: AppConfig['consoleOidc'];

  constructor(
    private readonly assets: ConsoleAssets,
    @Inject(OIDC_DISCOVERY) private readonly discovery: OidcDiscovery | null,
    config: ConfigService<AppConfig, true>,
  ) {
    this.oidc = config.get('consoleOidc', { infer: true });
  }

  @Get()
  async page(@Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    const endpoints = await this.discovery?.current();
    return this.send(reply, 'index.html', consoleCsp(endpoints?.tokenEndpoint));
  }

  /** What the page needs to sign in: public values only (a public client has no secret). */
  @Get('sign-in')
  async signIn(@Res({ passthrough: true }) reply: FastifyReply) {
    void reply.header('cache-control', 'no-store');
    if (!this.oidc || !this.discovery) return { configured: false };
    const endpoints = await this.discovery.current();
    if (!endpoints) return { configured: true, available: false, issuer: this.oidc.issuer };
    return {
      configured: true,
      available: true,
      issuer: this.oidc.issuer,
      clientId: this.oidc.clientId,
      scope: this.oidc.scope,
      authorizationEndpoint: endpoints.authorizationEndpoint,
      tokenEndpoint: endpoints.tokenEndpoint,
      ...(endpoints.endSessionEndpoint ? { endSessionEndpoint: endpoints.endSessionEndpoint } : {}),
    };
  }

  @Get('vendor/:file')
  vendor(@Param('file') file: string, @Res({ passthrough: true }) reply: FastifyReply): Buffer {
    return this.send(reply, `vendor/${file}`);
  }

  @Get(':file')
  file(@Param('file') file: string, @Res({ passthrough: true }) reply: FastifyReply): Buffer {
    return this.send(reply, file);
  }

  private send(reply: FastifyReply, name: string, csp = consoleCsp()): Buffer {
    const asset = this.assets.get(name);
    if (!asset) throw new ProblemException('not_found', 'No such file of the console.');
    void reply
      .header('content-type', asset.contentType)
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      // Revalidated on every load: a new image's files are used at once, never a cached mix.
      .header('cache-control', 'no-cache');
    return asset.body;
  }
}

/** `GET /admin/status`: this replica's state for the console's "Now" panel. */
@Controller('admin')
@UseGuards(CallerAuthGuard)
export class AdminStatusController {
  constructor(private readonly status: GatewayStatusReader) {}

  @Get('status')
  @RequireScopes('ledger:read')
  @ApiOperation({
    summary: "This replica's state: upstream token, circuit breaker, Redis, held long-polls, ledger queue, build",
    description:
      "API keys or operators' console tokens with `ledger:read` (never an app's JWT). Bound to the ops listener when `OPS_PORT` is set. " +
      '`ledger` is null while the ledger is not configured in this build; `routes` says which ' +
      'administration routes this build serves. Each replica answers for itself.',
  })
  @ApiTags('administration')
  @ApiSecurity(API_KEY_SCHEME)
  @ApiOkResponse({ type: GatewayStatusSchema, description: 'The state of the replica that answered.' })
  @ApiProblemResponses(['unauthenticated', 'forbidden', 'internal'])
  read(@CurrentCaller() caller: Caller, @Res({ passthrough: true }) reply: FastifyReply): Promise<GatewayStatus> {
    void reply.header('cache-control', 'no-store');
    return this.status.read(caller);
  }

  /** Who the console is acting as and what it may do (it shows only the buttons that will work). */
  @Get('me')
  @RequireScopes('ledger:read')
  @ApiOperation({
    summary: 'The credential of this request: an operator signed in to the console, or an API key',
    description:
      "API keys or operators' console tokens with `ledger:read`. `name` only for an operator whose token has one.",
  })
  @ApiTags('administration')
  @ApiSecurity(API_KEY_SCHEME)
  @ApiOkResponse({ type: OperatorSchema })
  @ApiProblemResponses(['unauthenticated', 'forbidden', 'internal'])
  me(@CurrentCaller() caller: Caller, @Res({ passthrough: true }) reply: FastifyReply) {
    operatorOnly(caller);
    void reply.header('cache-control', 'no-store');
    return { ...operatorOf(caller), scopes: [...caller.scopes].filter((scope) => scope.startsWith('ledger:')).sort() };
  }
}
