import { Controller, Get, Header, UseFilters } from '@nestjs/common';
import { HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { StoreHealthIndicator } from '../store/store.health.js';
import { FirstTokenAttemptIndicator } from '../token/token.health.js';
import { HealthCheckFailedFilter } from './health-check-failed.filter.js';
import { ApiProbe } from './health.openapi.js';
import { LedgerHealthIndicator } from './ledger.health.js';
import { LifecycleHealthIndicator } from './lifecycle.health.js';

/**
 * Kubernetes probes (docs/api.md §4). None needs a credential; none reveals a secret.
 * Bodies are Terminus JSON, also on 503 (not problem+json: probes and dashboards read them).
 */
@Controller('health')
@UseFilters(HealthCheckFailedFilter)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly lifecycle: LifecycleHealthIndicator,
    private readonly store: StoreHealthIndicator,
    private readonly firstToken: FirstTokenAttemptIndicator,
    private readonly ledger: LedgerHealthIndicator,
  ) {}

  @Get('live')
  @Header('cache-control', 'no-store')
  @ApiProbe('Liveness: 200 while the process can serve; never depends on Redis or the upstream', { canFail: false })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @Header('cache-control', 'no-store')
  @ApiProbe('Readiness: 200 when Redis (if configured) answers and the process is not shutting down', {
    canFail: true,
  })
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.lifecycle.isHealthy('lifecycle'),
      () => this.store.isHealthy('store'),
      ...this.ledger.checks('ledger', 'ready'),
    ]);
  }

  @Get('startup')
  @Header('cache-control', 'no-store')
  @ApiProbe('Startup: 200 once configuration is loaded and the first upstream token attempt has finished', {
    canFail: true,
  })
  startup(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.firstToken.isHealthy('firstTokenAttempt'),
      ...this.ledger.checks('ledger', 'startup'),
    ]);
  }
}
