import type { LoggerService, LogLevel } from '@nestjs/common';
import { pino, type Logger as Pino } from 'pino';
import { knownSecrets } from '../config/known-secrets.js';
import { redactText } from './redact.js';

/**
 * Structured JSON logs (pino) for every Nest log call and the access log. Messages pass
 * through `redactText` (objects are serialised first, so credential-shaped fields are masked
 * by the same patterns), and every finished line is scrubbed of the secret values the gateway
 * knows (known-secrets.ts). No pino `redact` paths: no object reaches pino unserialised but the
 * access line and the fields below, which are built from known, safe facts, and its per-line
 * cost was 2.6 % of the gateway's CPU per inquiry (docs/decisions/0007-synchronous-logging.md). Levels are written as names (`"level":"info"`), which log pipelines
 * (Loki, Elasticsearch, Cloud Logging) read without configuration. A line about one request
 * carries its `requestId` as a field of its own, given by the code that writes it (the access
 * line, the inquiry path's lines: request-context.ts).
 */
export class JsonLogger implements LoggerService {
  readonly pino: Pino;

  constructor(level: string, destination?: NodeJS.WritableStream) {
    this.pino = pino(
      {
        level,
        base: { service: 'verification-gateway' },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        hooks: { streamWrite: (line) => knownSecrets.scrub(line) },
      },
      destination ?? bufferedStdout(),
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
    if (isFactsEntry(message)) {
      // Facts in their own JSON fields (the inquiry line): string values masked like messages.
      const fields: Record<string, unknown> = { context };
      for (const key of Object.keys(message)) {
        if (key === 'msg') continue;
        const value = message[key];
        fields[key] = typeof value === 'string' ? redactText(value) : value;
      }
      this.pino[level](fields, redactText(message.msg));
      return;
    }
    const text =
      message instanceof Error
        ? `${message.name}: ${message.message}`
        : typeof message === 'string'
          ? message
          : describe(message);
    this.pino[level]({ context }, redactText(text));
  }
}

/**
 * An entry logged as fields: a plain object with a `msg`, e.g.
 * `logger.log({ msg: 'inquiry', trackId, outcome })`. Other objects are serialised into `msg`.
 */
function isFactsEntry(message: unknown): message is Record<string, unknown> & { msg: string } {
  return (
    typeof message === 'object' &&
    message !== null &&
    Object.getPrototypeOf(message) === Object.prototype &&
    typeof (message as { msg?: unknown }).msg === 'string'
  );
}

/**
 * stdout through a 4 KiB buffer: one write per few lines instead of one per line, flushed at
 * least every second so a quiet gateway's lines are never held back, and at exit.
 *
 * Synchronous writes (pino's default), not sonic-boom's asynchronous mode: that one hands each
 * write to libuv's thread pool (3–4 µs more CPU per line to a pipe, docs/decisions/0007-synchronous-logging.md) and,
 * when the log collector stalls, buffers without bound in a heap capped at 128 MiB. Written
 * synchronously, a stalled stdout makes the event loop wait (docs/operations.md, "Logs")
 * instead of filling the memory.
 */
function bufferedStdout(): ReturnType<typeof pino.destination> {
  const destination = pino.destination({ sync: true, minLength: 4096 });
  setInterval(() => {
    try {
      destination.flush();
    } catch {
      // A flush while the stream is busy: the next one or exit writes it.
    }
  }, 1000).unref();
  // pino flushes only its asynchronous destinations at exit; this one holds up to 4 KiB.
  process.once('exit', () => {
    try {
      destination.flushSync();
    } catch {
      // stdout already closed: nothing more can be written.
    }
  });
  return destination;
}

/** JSON for objects; a logging call never throws (undefined, BigInt, cycles). */
function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return `[unserialisable ${typeof value}]`;
  }
}
