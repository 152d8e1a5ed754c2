import { EventEmitter } from 'node:events';
import type { LoggerService } from '@nestjs/common';

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
