import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiPublic } from '../openapi.js';
import type { FastifyReply } from 'fastify';
import { GatewayMetrics } from './metrics.js';

/** `GET /metrics`: Prometheus text format (docs/api.md §4). No credential needed. */
@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: GatewayMetrics) {}

  @Get()
  @ApiOperation({ summary: 'Prometheus metrics (text format)' })
  @ApiPublic()
  @ApiOkResponse({
    description: 'Prometheus text exposition format 0.0.4.',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  @Header('Cache-Control', 'no-store')
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    await reply.header('content-type', this.metrics.registry.contentType).send(await this.metrics.registry.metrics());
  }
}
