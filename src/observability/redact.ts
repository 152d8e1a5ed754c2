/**
 * Last line of defence for log text: masks anything shaped like a personal identifier or a
 * credential, whatever code produced the message. Code should not log such values at all;
 * this catches the ones that slip through (an upstream message echoing input, say).
 */
import { knownSecrets } from '../config/known-secrets.js';

const DIGIT = '[0-9\\u06F0-\\u06F9\\u0660-\\u0669]';

const PATTERNS: Array<[RegExp, (match: string) => string]> = [
  // Bearer tokens and anything labelled as a token, password or key.
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]+/gi, (m) => `${m.split(/\s+/)[0]} [redacted]`],
  [
    /\b(access[-_]?token|refresh[-_]?token|password|api[-_]?key|secret)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi,
    (m) => m.replace(/([:=]\s*["']?)[^\s"',}]+$/, '$1[redacted]'),
  ],
  // IBANs (IR + 24 digits, possibly spaced or dashed, ASCII or Persian/Arabic digits) before plain digit runs.
  [new RegExp(`\\bIR(?:[\\s-]?${DIGIT}){24}(?!${DIGIT})`, 'gi'), (m) => maskMiddle(m.replace(/[\s-]/g, ''))],
];

/** National codes, mobiles (09…, +989…, 989…) and other long digit runs, ASCII or Persian/Arabic digits. */
const DIGIT_RUN = new RegExp(`\\+?${DIGIT}{8,}`, 'g');

/** UUIDs (trackIds) stay readable: an all-digit group of one is not a personal identifier. */
const UUID = /\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;

export function maskMiddle(value: string): string {
  if (value.length <= 4) return '*'.repeat(value.length);
  return value.slice(0, 2) + '*'.repeat(value.length - 4) + value.slice(-2);
}

export function redactText(text: string): string {
  // Known secret values first: a pattern may mask only part of one (docs/runbooks.md).
  let result = knownSecrets.scrub(text);
  for (const [pattern, mask] of PATTERNS) result = result.replace(pattern, mask);
  // Digit runs are masked outside UUIDs only (odd parts of the split are the UUIDs).
  return result
    .split(UUID)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(DIGIT_RUN, maskMiddle)))
    .join('');
}
