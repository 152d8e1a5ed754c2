import 'reflect-metadata';
import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppModule } from './app.module.js';
import type { AppConfig } from './config/app-config.js';
import { loadConfig } from './config/load-config.js';
import { JsonLogger } from './observability/json-logger.js';
import { setupOpenApi } from './openapi.js';
import { sendProblem, ProblemFilter } from './problem/problem.filter.js';
import { toProblem } from './problem/to-problem.js';

export interface GatewayOptions {
  /** Defaults to structured JSON logs at LOG_LEVEL; tests pass `false` or their own. */
  logger?: LoggerService | false;
}

export interface Gateway {
  app: NestFastifyApplication;
  config: AppConfig;
}

/**
 * Builds a ready-to-listen gateway from an environment map. Configuration is validated
 * first (throwing `ConfigError` naming every bad variable), so nothing starts half-configured.
 * main.ts, the sandbox and the tests all start the gateway through this one function.
 */
export async function createGateway(env: Record<string, string | undefined>, options: GatewayOptions = {}): Promise<Gateway> {
  const config = loadConfig(env);
  const adapter = new FastifyAdapter({
    bodyLimit: config.http.bodyLimitBytes,
    // Requests are correlated by trackId; fastify's own request logging stays off.
    logger: false,
    // Deep JSON bodies cannot be used to exhaust the parser.
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.register(config), adapter, {
    logger: options.logger ?? new JsonLogger(config.logging.level),
    abortOnError: false,
  });
  app.useGlobalFilters(new ProblemFilter());
  // Errors fastify raises before a route runs (malformed JSON, body too large, bad
  // content type) never reach Nest's filters: give them the same problem+json shape.
  app
    .getHttpAdapter()
    .getInstance()
    .setErrorHandler((error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => sendProblem(reply, toProblem(error)));
  setupOpenApi(app);
  await app.init();
  return { app, config };
}
