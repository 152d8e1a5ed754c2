import type { LoggerService, LogLevel } from '@nestjs/common';
import { pino, type Logger as Pino } from 'pino';
import { knownSecrets } from './known-secrets.js';
import { redactText } from './redact.js';
import { currentRequest } from './request-context.js';

/**
 * Structured JSON logs (pino) for every Nest log call and the access log. Messages pass
 * through `redactText`, pino's own `redact` removes well-known secret fields from any object
 * logged, and every finished line is scrubbed of the secret values the gateway knows
 * (known-secrets.ts). Levels are written as names (`"level":"info"`), which log pipelines
 * (Loki, Elasticsearch, Cloud Logging) read without configuration; every line written while
 * a request is served carries its `requestId` (and `traceId` when traced) from the
 * async-local request context.
 */
export class JsonLogger implements LoggerService {
  readonly pino: Pino;

  constructor(level: string, destination?: NodeJS.WritableStream) {
    this.pino = pino(
      {
        level,
        base: { service: 'verification-gateway' },
        redact: {
          paths: [
            'password',
            '*.password',
            'accessToken',
            '*.accessToken',
            'refreshToken',
            '*.refreshToken',
            'authorization',
            '*.authorization',
            'headers["x-api-key"]',
          ],
          censor: '[redacted]',
        },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        mixin: requestFields,
        hooks: { streamWrite: (line) => knownSecrets.scrub(line) },
      },
      destination ?? pino.destination({ sync: false }),
    );
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }
  setLogLevels(_levels: LogLevel[]): void {
    // The level comes from LOG_LEVEL alone.
  }

  private write(
    level: 'info' | 'error' | 'warn' | 'debug' | 'trace' | 'fatal',
    message: unknown,
    params: unknown[],
  ): void {
    if (!this.pino.isLevelEnabled(level)) return;
    // Nest passes the context (logger name) as the last string parameter; error() may add a
    // stack before it, which is dropped: stacks can carry input and never reach the logs.
    // A stack passed without a context (static `Logger.error(message, stack)`) is last: it is
    // no context name, so it is dropped too rather than logged as one.
    const last = params[params.length - 1];
    const context = typeof last === 'string' && /^[\w.:@/-]{1,128}$/.test(last) ? last : undefined;
    const text =
      message instanceof Error
        ? `${message.name}: ${message.message}`
        : typeof message === 'string'
          ? message
          : describe(message);
    this.pino[level]({ context }, redactText(text));
  }
}

const NO_FIELDS = {};

/** The request id (and trace id) of the request being served, on every line written for it. */
function requestFields(): object {
  const facts = currentRequest();
  if (!facts) return NO_FIELDS;
  const traceId = facts.trace?.span.spanContext().traceId;
  return traceId ? { requestId: facts.requestId, traceId } : { requestId: facts.requestId };
}

/** JSON for objects; a logging call never throws (undefined, BigInt, cycles). */
function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return `[unserialisable ${typeof value}]`;
  }
}
