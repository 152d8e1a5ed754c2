import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { ShutdownState } from './shutdown.state.js';

/** Readiness fails as soon as shutdown begins, so traffic drains away before the server stops. */
@Injectable()
export class LifecycleHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownState,
  ) {}

  isHealthy<const Key extends string>(key: Key) {
    const session = this.indicators.check(key);
    return this.shutdown.isShuttingDown ? session.down({ message: 'shutting down' }) : session.up();
  }
}
