import { Catch, ServiceUnavailableException, type ExceptionFilter, type ArgumentsHost } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

/**
 * A failed Terminus check throws 503 with the check's result. Probes and dashboards read that
 * Terminus JSON (docs/api.md §4), so it is sent as it is, not turned into problem+json
 * by the global problem filter.
 */
@Catch(ServiceUnavailableException)
export class HealthCheckFailedFilter implements ExceptionFilter {
  catch(error: ServiceUnavailableException, host: ArgumentsHost): void {
    void host
      .switchToHttp()
      .getResponse<FastifyReply>()
      .status(503)
      .header('cache-control', 'no-store')
      .send(error.getResponse());
  }
}
