import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheckService,
  HealthIndicatorService,
  type HealthCheckResult,
  type HealthIndicatorFunction,
} from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import { RedisConnection } from '../store/redis-connection.js';
import { TokenProvider } from '../token/token.provider.js';
import { ShutdownState } from './shutdown.state.js';

/**
 * Kubernetes probes (internal-api.md §4). None needs a credential; none reveals a secret.
 * Bodies are Terminus JSON, also on 503 (not problem+json: probes and dashboards read them).
 */
@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly redis: RedisConnection,
    private readonly tokens: TokenProvider,
    private readonly shutdown: ShutdownState,
  ) {}

  @Get('live')
  @ApiOperation({ summary: 'Liveness: 200 while the process can serve; never depends on Redis or the upstream' })
  live(@Res() reply: FastifyReply): Promise<void> {
    return this.run(reply, []);
  }

  @Get('ready')
  @ApiOperation({ summary: 'Readiness: 200 when Redis (if configured) answers and the process is not shutting down' })
  ready(@Res() reply: FastifyReply): Promise<void> {
    return this.run(reply, [
      () => {
        const session = this.indicators.check('lifecycle');
        return this.shutdown.isShuttingDown ? session.down({ message: 'shutting down' }) : session.up();
      },
      async () => {
        const session = this.indicators.check('store');
        if (!this.redis.isConfigured) return session.up({ mode: 'memory' });
        const reachable = await this.redis.isReachable();
        return reachable ? session.up({ mode: 'redis' }) : session.down({ mode: 'redis', message: 'unreachable' });
      },
    ]);
  }

  @Get('startup')
  @ApiOperation({
    summary: 'Startup: 200 once configuration is loaded and the first upstream token attempt has finished',
  })
  startup(@Res() reply: FastifyReply): Promise<void> {
    return this.run(reply, [
      () => {
        const session = this.indicators.check('firstTokenAttempt');
        return this.tokens.startupComplete ? session.up() : session.down({ message: 'in progress' });
      },
    ]);
  }

  private async run(reply: FastifyReply, checks: HealthIndicatorFunction[]): Promise<void> {
    let status = 200;
    let body: HealthCheckResult | string | object;
    try {
      body = await this.health.check(checks);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      status = 503;
      body = error.getResponse();
    }
    await reply.status(status).header('cache-control', 'no-store').send(body);
  }
}
