/**
 * Last line of defence for log text: masks anything shaped like a personal identifier or a
 * credential, whatever code produced the message. Code should not log such values at all;
 * this catches the ones that slip through (an upstream message echoing input, say).
 */
const PATTERNS: Array<[RegExp, (match: string) => string]> = [
  // Bearer tokens and anything labelled as a token, password or key.
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]+/gi, (m) => `${m.split(/\s+/)[0]} [redacted]`],
  [/\b(access_?token|refresh_?token|password|api_?key|secret)(["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, (m) => m.replace(/([:=]\s*["']?)[^\s"',}]+$/, '$1[redacted]')],
  // IBANs (IR + 24 digits, possibly spaced) before plain digit runs.
  [/\bIR(?:\s?\d){24}\b/gi, (m) => maskMiddle(m.replace(/\s/g, ''))],
  // National codes, mobiles (09…, +989…, 989…) and other long digit runs, ASCII or Persian/Arabic digits.
  [/\+?[0-9\u06F0-\u06F9\u0660-\u0669]{8,}/g, maskMiddle],
];

export function maskMiddle(value: string): string {
  if (value.length <= 4) return '*'.repeat(value.length);
  return value.slice(0, 2) + '*'.repeat(value.length - 4) + value.slice(-2);
}

export function redactText(text: string): string {
  let result = text;
  for (const [pattern, mask] of PATTERNS) result = result.replace(pattern, mask);
  return result;
}
