import type { Cluster, Redis } from 'ioredis';
import type { GatewayMetrics } from './metrics.js';

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
export function instrumentRedis(client: Redis | Cluster, metrics: GatewayMetrics): void {
  const send = client.sendCommand.bind(client) as (command: SentCommand, ...rest: unknown[]) => unknown;
  (client as { sendCommand: unknown }).sendCommand = (command: SentCommand, ...rest: unknown[]) => {
    const started = performance.now();
    const result = send(command, ...rest);
    const name = command.name.toLowerCase();
    command.promise.then(
      () => metrics.redisCommands.observe({ command: name, outcome: 'ok' }, (performance.now() - started) / 1000),
      () => {
        metrics.redisCommands.observe({ command: name, outcome: 'error' }, (performance.now() - started) / 1000);
        metrics.redisCommandErrors.inc({ command: name });
      },
    );
    return result;
  };
}
