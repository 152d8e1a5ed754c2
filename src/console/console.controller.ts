import { Controller, Get, Param, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Caller } from '../caller-auth/caller.js';
import { CallerAuthGuard, CurrentCaller, RequireScopes } from '../caller-auth/caller-auth.guard.js';
import { API_KEY_SCHEME } from '../openapi.js';
import { ApiProblemResponses } from '../problem/problem.openapi.js';
import { ProblemException } from '../problem/problem.js';
import { CONSOLE_CSP, ConsoleAssets } from './console-assets.js';
import { GatewayStatusReader, type GatewayStatus } from './gateway-status.js';
import { GatewayStatusSchema } from './gateway-status.openapi.js';

/**
 * `GET /console` and its files (docs/api.md §4, docs/operations.md "The console"): the page needs
 * no credential; every figure it shows comes from the authenticated admin routes, called with
 * the key the operator types in. Bound to the ops listener when OPS_PORT is set.
 */
@Controller('console')
@ApiExcludeController()
export class ConsoleController {
  constructor(private readonly assets: ConsoleAssets) {}

  @Get()
  page(@Res({ passthrough: true }) reply: FastifyReply): Buffer {
    return this.send(reply, 'index.html');
  }

  @Get('vendor/:file')
  vendor(@Param('file') file: string, @Res({ passthrough: true }) reply: FastifyReply): Buffer {
    return this.send(reply, `vendor/${file}`);
  }

  @Get(':file')
  file(@Param('file') file: string, @Res({ passthrough: true }) reply: FastifyReply): Buffer {
    return this.send(reply, file);
  }

  private send(reply: FastifyReply, name: string): Buffer {
    const asset = this.assets.get(name);
    if (!asset) throw new ProblemException('not_found', 'No such file of the console.');
    void reply
      .header('content-type', asset.contentType)
      .header('content-security-policy', CONSOLE_CSP)
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
      'API keys with `ledger:read` (never a JWT). Bound to the ops listener when `OPS_PORT` is set. ' +
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
}
