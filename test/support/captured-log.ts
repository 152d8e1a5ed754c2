import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, expect, jest } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';

/** Log lines of one gateway, as `level: context: message`; 'line' is emitted for each. */
export class CapturedLog extends EventEmitter implements LoggerService {
  readonly lines: string[] = [];
  private add(level: string, message: unknown, context: unknown): void {
    const line = `${level}: ${typeof context === 'string' ? context : ''}: ${String(message)}`;
    this.lines.push(line);
    this.emit('line', line);
  }
  log(message: unknown, context?: unknown): void {
    this.add('info', message, context);
  }
  error(message: unknown, _trace?: unknown, context?: unknown): void {
    this.add('error', message, context);
  }
  warn(message: unknown, context?: unknown): void {
    this.add('warn', message, context);
  }
  debug(message: unknown, context?: unknown): void {
    this.add('debug', message, context);
  }
  verbose(message: unknown, context?: unknown): void {
    this.add('verbose', message, context);
  }
}

/**
 * Captures what Nest's Logger writes at `error` during each test of the calling spec file, instead
 * of printing it into a green run's log. Each line must be one the file provokes on purpose (it
 * matches one of `expected`), or the test that logged it fails; `take()` hands a test its lines to
 * assert more closely. Call at the top level of a spec file.
 */
export function capturedNestErrors(expected: RegExp[]): { take(): string[] } {
  let lines: string[] = [];
  beforeEach(() => {
    lines = [];
    jest
      .spyOn(Logger.prototype, 'error')
      .mockImplementation(
        (message: unknown) => void lines.push(typeof message === 'string' ? message : JSON.stringify(message)),
      );
  });
  afterEach(() => {
    jest.restoreAllMocks();
    expect(lines.filter((line) => !expected.some((pattern) => pattern.test(line)))).toEqual([]);
  });
  return { take: () => lines.splice(0) };
}
