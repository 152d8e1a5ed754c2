import { Global, Module } from '@nestjs/common';
import { GatewayMetrics } from './metrics.js';
import { MetricsController } from './metrics.controller.js';

@Global()
@Module({ controllers: [MetricsController], providers: [GatewayMetrics], exports: [GatewayMetrics] })
export class ObservabilityModule {}
