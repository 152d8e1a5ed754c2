/**
 * Secrets by value: the gateway knows its secrets exactly (the upstream username and password,
 * the access and refresh tokens it holds, the raw API keys callers proved), so any text that
 * contains one is scrubbed whatever its shape. Pattern masking (redact.ts) cannot catch an
 * upstream that echoes "Login failed for user X with password Y"; this can (docs/runbooks.md,
 * "Secrets in logs").
 *
 * One registry per process: the logger, the problem bodies and the redactor all read it.
 * Tokens are renewed forever, so only the newest of them are kept (an old one is worthless
 * once expired). API keys are never dropped: every key a caller proved stays scrubbed. They
 * are bounded by the configuration, not here: only a key that matched an `API_KEYS` entry is
 * added, so there are at most as many as entries configured over the process's life.
 * Scrubbing costs three `includes` per value per text.
 */
const REPLACEMENT = '[redacted]';
/** Shorter values would scrub ordinary words; the pattern masking still applies to them. */
const MIN_LENGTH = 4;
/** How many values of a kind are kept, newest first (credentials: rotations of the `*_FILE` secrets). */
const MAX_PER_KIND: Record<SecretKind, number> = { token: 16, credential: 64, api_key: Infinity };

export type SecretKind = 'credential' | 'token' | 'api_key';

export class KnownSecrets {
  private readonly byKind = new Map<SecretKind, string[]>();
  /** Every value and its JSON-escaped form, longest first (a value containing another wins). */
  private needles: string[] = [];

  add(kind: SecretKind, ...values: Array<string | undefined>): void {
    let list = this.byKind.get(kind);
    if (!list) this.byKind.set(kind, (list = []));
    let changed = false;
    for (const value of values) {
      if (value === undefined || value.length < MIN_LENGTH || list.includes(value)) continue;
      list.push(value);
      if (list.length > MAX_PER_KIND[kind]) list.shift();
      changed = true;
    }
    if (changed) this.rebuild();
  }

  /** The text with every known secret value replaced by `[redacted]`. */
  scrub(text: string): string {
    let result = text;
    for (const needle of this.needles) {
      if (result.includes(needle)) result = result.replaceAll(needle, REPLACEMENT);
    }
    return result;
  }

  private rebuild(): void {
    const needles = new Set<string>();
    for (const list of this.byKind.values()) {
      for (const value of list) {
        needles.add(value);
        // A log line is JSON: a value with quotes, backslashes or non-ASCII appears escaped there.
        needles.add(JSON.stringify(value).slice(1, -1));
        needles.add(
          JSON.stringify(value)
            .slice(1, -1)
            .replace(/[\u007f-\uffff]/g, escapeUnicode),
        );
      }
    }
    this.needles = [...needles].sort((a, b) => b.length - a.length);
  }
}

const escapeUnicode = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

export const knownSecrets = new KnownSecrets();
