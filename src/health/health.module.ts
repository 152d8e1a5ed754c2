import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LedgerModule } from '../ledger/ledger.module.js';
import { StoreModule } from '../store/store.module.js';
import { TokenModule } from '../token/token.module.js';
import { HealthController } from './health.controller.js';
import { LedgerHealthIndicator } from './ledger.health.js';
import { LifecycleHealthIndicator } from './lifecycle.health.js';
import { ShutdownState } from './shutdown.state.js';
import { StateGauges } from './state-gauges.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), StoreModule, TokenModule, LedgerModule],
  controllers: [HealthController],
  providers: [ShutdownState, StateGauges, LifecycleHealthIndicator, LedgerHealthIndicator],
})
export class HealthModule {}
