import type { Cluster, Redis } from 'ioredis';
import type { GatewayMetrics } from './metrics.js';
import { currentRequest } from './request-context.js';
import { endSpanWithError } from './tracing.js';

interface SentCommand {
  name: string;
  promise: Promise<unknown>;
}

/**
 * Latency and errors of every Redis command a client sends (vgw_redis_command_duration_seconds,
 * vgw_redis_command_errors_total), measured where ioredis sends it: `sendCommand` is the one
 * method every command, script and pipeline entry goes through (the same point
 * @opentelemetry/instrumentation-ioredis patches), so no store has to time its own calls.
 * Labels hold the command name only, never keys or arguments.
 */
export function instrumentRedis(client: Redis | Cluster, metrics: GatewayMetrics, options: { traced: boolean }): void {
  const send = client.sendCommand.bind(client) as (command: SentCommand, ...rest: unknown[]) => unknown;
  (client as { sendCommand: unknown }).sendCommand = (command: SentCommand, ...rest: unknown[]) => {
    const started = performance.now();
    const name = command.name.toLowerCase();
    // The request that sends the command: ioredis sends it synchronously in the caller's
    // context (auto-pipelining, which would batch it into another request's tick, is off).
    const issuer = options.traced ? currentRequest()?.trace : undefined;
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
