import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { AccountingModule } from './accounting/accounting.module.js';
import { REFUSAL_TIME_ZONE } from './caller-auth/refusal-tally.js';
import type { AppConfig } from './config/app-config.js';
import { ConsoleModule } from './console/console.module.js';
import { HealthModule } from './health/health.module.js';
import { ShutdownSequence } from './http/shutdown-sequence.js';
import { InquiryModule } from './inquiry/inquiry.module.js';
import { ReuseModule } from './reuse/reuse.module.js';
import { ObservabilityModule } from './observability/observability.module.js';
import { StoreModule } from './store/store.module.js';
import { TokenModule } from './token/token.module.js';
import { TrackingModule } from './tracking/tracking.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/** Values one feature takes from another's slice, handed over here rather than read there. */
@Module({})
class HandedOver {}

/** Wires the feature modules together; each owns its slice of the validated config. */
@Module({})
export class AppModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // The config was validated before Nest started (load-config): only that object is
        // served, never raw process.env, so every instance in a process can differ.
        ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          ignoreEnvVars: true,
          skipProcessEnv: true,
          load: [() => ({ ...config })],
        }),
        {
          module: HandedOver,
          global: true,
          // Refusals are tallied by the budgets' day (caller-auth counts them, budgets owns the zone).
          providers: [{ provide: REFUSAL_TIME_ZONE, useValue: config.budgets.timeZone }],
          exports: [REFUSAL_TIME_ZONE],
        },
        ObservabilityModule,
        AccountingModule,
        StoreModule,
        TokenModule,
        HealthModule,
        ReuseModule,
        InquiryModule,
        ConsoleModule,
        TrackingModule,
        WebhooksModule,
      ],
      // The one shutdown sequence: its steps' order is its own, not the modules'.
      providers: [ShutdownSequence],
    };
  }
}
