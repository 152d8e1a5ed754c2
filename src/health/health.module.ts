import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { StoreModule } from '../store/store.module.js';
import { TokenModule } from '../token/token.module.js';
import { HealthController } from './health.controller.js';
import { LifecycleHealthIndicator } from './lifecycle.health.js';
import { ShutdownState } from './shutdown.state.js';
import { StateGauges } from './state-gauges.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), StoreModule, TokenModule],
  controllers: [HealthController],
  providers: [ShutdownState, StateGauges, LifecycleHealthIndicator],
})
export class HealthModule {}
