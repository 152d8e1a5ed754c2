import type { Cluster, Redis } from 'ioredis';
import type { GatewayMetrics } from './metrics.js';
import { currentRequest } from './request-context.js';
import { endSpanWithError, type RequestTrace } from './tracing.js';

interface SentCommand {
  name: string;
  promise: Promise<unknown>;
  /** The request that issued the command (tracing only): set where the command is queued. */
  [ISSUER]?: RequestTrace;
}

const ISSUER = Symbol('vgw.redis.issuer');

/**
 * Latency and errors of every Redis command a client sends (vgw_redis_command_duration_seconds,
 * vgw_redis_command_errors_total), measured where ioredis sends it: `sendCommand` is the one
 * method every command, script and pipeline entry goes through (the same point
 * @opentelemetry/instrumentation-ioredis patches), so no store has to time its own calls.
 * Labels hold the command name only, never keys or arguments.
 */
export function instrumentRedis(client: Redis | Cluster, metrics: GatewayMetrics, options: { traced: boolean }): void {
  if (options.traced) rememberIssuers(client);
  const send = client.sendCommand.bind(client) as (command: SentCommand, ...rest: unknown[]) => unknown;
  (client as { sendCommand: unknown }).sendCommand = (command: SentCommand, ...rest: unknown[]) => {
    const started = performance.now();
    const name = command.name.toLowerCase();
    const issuer = options.traced ? (command[ISSUER] ?? currentRequest()?.trace) : undefined;
    // The span names the command only: keys and arguments hold trackIds, scopes and ciphertext.
    const span = issuer?.tracing.startClientSpan(issuer.span, `redis ${name}`, {
      'db.system.name': 'redis',
      'db.operation.name': name,
    });
    const result = send(command, ...rest);
    command.promise.then(
      () => {
        metrics.redisCommands.observe({ command: name, outcome: 'ok' }, (performance.now() - started) / 1000);
        span?.end();
      },
      () => {
        metrics.redisCommands.observe({ command: name, outcome: 'error' }, (performance.now() - started) / 1000);
        metrics.redisCommandErrors.inc({ command: name });
        if (span) endSpanWithError(span, 'redis_error');
      },
    );
    return result;
  };
}

/**
 * With auto-pipelining, ioredis queues a command on a pipeline in the caller's context but
 * sends the whole batch a tick later, in whichever context flushes it: the issuing request
 * is read where the command is queued (the pipeline's `sendCommand`) and carried on the
 * command, so a Redis span always joins the trace of the request that asked for it.
 */
function rememberIssuers(client: Redis | Cluster): void {
  const createPipeline = client.pipeline.bind(client) as (...args: unknown[]) => ReturnType<Redis['pipeline']>;
  (client as { pipeline: unknown }).pipeline = (...args: unknown[]) => {
    const pipeline = createPipeline(...args);
    const queue = (pipeline as unknown as { sendCommand: (command: SentCommand) => unknown }).sendCommand.bind(
      pipeline,
    );
    (pipeline as unknown as { sendCommand: unknown }).sendCommand = (command: SentCommand) => {
      command[ISSUER] = currentRequest()?.trace;
      return queue(command);
    };
    return pipeline;
  };
}
