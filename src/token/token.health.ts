import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { TokenProvider } from './token.provider.js';

/** Startup (docs/api.md §4): up once the first upstream token attempt has finished, successfully or not. */
@Injectable()
export class FirstTokenAttemptIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly tokens: TokenProvider,
  ) {}

  isHealthy<const Key extends string>(key: Key) {
    const session = this.indicators.check(key);
    return this.tokens.startupComplete ? session.up() : session.down({ message: 'in progress' });
  }
}
