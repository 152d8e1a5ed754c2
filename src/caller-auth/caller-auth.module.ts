import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { ApiKeyAuthenticator } from './api-key.authenticator.js';
import { CALLER_AUTHENTICATORS, type CallerAuthenticator } from './caller.js';
import { CallerQuotas } from './caller-quotas.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { StoreModule } from '../store/store.module.js';
import { CallerAuthGuard } from './caller-auth.guard.js';
import { JwtAuthenticator } from './jwt.authenticator.js';
import { OIDC_DISCOVERY, OidcDiscovery } from './oidc-discovery.js';
import { OperatorTokenAuthenticator } from './operator-token.authenticator.js';
import { REFUSAL_TIME_ZONE, RefusalTally } from './refusal-tally.js';

/** Caller identity (API keys for services, JWTs for apps, when configured) and quotas. */
@Module({
  imports: [StoreModule],
  providers: [
    CallerQuotas,
    ApiKeyAuthenticator,
    {
      provide: OIDC_DISCOVERY,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): OidcDiscovery | null => {
        const oidc = config.get('consoleOidc', { infer: true });
        return oidc ? new OidcDiscovery(oidc.issuer) : null;
      },
    },
    {
      provide: CALLER_AUTHENTICATORS,
      inject: [ConfigService, ApiKeyAuthenticator, GatewayMetrics, OIDC_DISCOVERY],
      useFactory: (
        config: ConfigService<AppConfig, true>,
        apiKeys: ApiKeyAuthenticator,
        metrics: GatewayMetrics,
        discovery: OidcDiscovery | null,
      ): CallerAuthenticator[] => {
        const jwt = config.get('callers', { infer: true }).jwt;
        const oidc = config.get('consoleOidc', { infer: true });
        // Operators' tokens before apps' JWTs: each answers only for tokens addressed to it.
        return [
          apiKeys,
          ...(oidc && discovery ? [new OperatorTokenAuthenticator(oidc, discovery, jwt !== undefined)] : []),
          ...(jwt ? [new JwtAuthenticator(config, metrics)] : []),
        ];
      },
    },
    CallerAuthGuard,
    // One per process: the quotas and the budgets count into it, the ledger flushes it.
    {
      provide: RefusalTally,
      inject: [REFUSAL_TIME_ZONE, GatewayMetrics],
      useFactory: (timeZone: string, metrics: GatewayMetrics) => new RefusalTally(timeZone, metrics.registry),
    },
  ],
  exports: [CallerAuthGuard, CALLER_AUTHENTICATORS, OIDC_DISCOVERY, CallerQuotas, RefusalTally],
})
export class CallerAuthModule {}
