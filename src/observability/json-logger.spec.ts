/**
 * JsonLogger: one JSON object per line, messages redacted, stacks and stray parameters never
 * written, and a logging call that never throws.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { JsonLogger } from './json-logger.js';

function capture(level = 'trace'): {
  logger: JsonLogger;
  lines: () => Array<Record<string, unknown>>;
  raw: () => string;
} {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  return {
    logger: new JsonLogger(level, stream),
    raw: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

const STACK =
  'Error: boom 0499370899\n    at handler (/app/dist/inquiry/inquiry.service.js:10:5)\n    at process (node:internal)';

describe('JsonLogger', () => {
  it('writes one JSON object per call with level, context and the redacted message', () => {
    const { logger, lines } = capture();
    logger.log('mobile 09121234567 and Bearer abc.def', 'InquiryService');
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 'info',
        context: 'InquiryService',
        msg: 'mobile 09*******67 and Bearer [redacted]',
        service: 'verification-gateway',
      }),
    ]);
  });

  it('maps Nest levels onto pino levels and honours the configured level', () => {
    const { logger, lines } = capture('warn');
    logger.verbose('v', 'C');
    logger.debug('d', 'C');
    logger.log('i', 'C');
    logger.warn('w', 'C');
    logger.error('e', 'C');
    logger.fatal('f', 'C');
    expect(lines().map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'w'],
      ['error', 'e'],
      ['fatal', 'f'],
    ]);
  });

  it('drops the stack of error(message, stack, context)', () => {
    const { logger, raw, lines } = capture();
    logger.error('request failed', STACK, 'ExceptionsHandler');
    expect(lines()).toEqual([expect.objectContaining({ msg: 'request failed', context: 'ExceptionsHandler' })]);
    expect(raw()).not.toContain('    at ');
  });

  it('drops a stack passed without a context instead of logging it as the context', () => {
    const { logger, raw, lines } = capture();
    logger.error('request failed', STACK);
    expect(lines()[0].context).toBeUndefined();
    expect(raw()).not.toContain('    at ');
    expect(raw()).not.toContain('0499370899');
  });

  it('never writes a free-text parameter as the context', () => {
    const { logger, raw } = capture();
    logger.warn('odd call', 'national code 0499370899 was sent');
    expect(raw()).not.toContain('0499370899');
  });

  it('logs an Error as name and redacted message, never its stack', () => {
    const { logger, raw, lines } = capture();
    const error = new Error('password=hunter2 for 0499370899');
    logger.error(error, 'C');
    expect(lines()[0].msg).toBe('Error: password=[redacted] for 04******99');
    expect(raw()).not.toContain('    at ');
  });

  it('serialises objects, redacting credential-shaped fields, and never throws', () => {
    const { logger, lines, raw } = capture();
    logger.log({ accessToken: 'tok-123456', refreshToken: 'ref-abc', nationalCode: '0499370899' }, 'C');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => logger.log(cyclic, 'C')).not.toThrow();
    expect(() => logger.log(undefined, 'C')).not.toThrow();
    expect(() => logger.log(10n, 'C')).not.toThrow();
    expect(raw()).not.toContain('tok-123456');
    expect(raw()).not.toContain('ref-abc');
    expect(raw()).not.toContain('0499370899');
    expect(lines()).toHaveLength(4);
  });

  it('writes an entry with a msg as JSON fields, string values masked', () => {
    const { logger, lines } = capture();
    logger.log(
      { msg: 'inquiry', trackId: 'abc', outcome: 'succeeded', status: 200, note: 'for 0499370899' },
      'Inquiry',
    );
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 'info',
        context: 'Inquiry',
        msg: 'inquiry',
        trackId: 'abc',
        outcome: 'succeeded',
        status: 200,
        note: 'for 04******99',
      }),
    ]);
  });
});
