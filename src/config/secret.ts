import { inspect } from 'node:util';

/**
 * A configuration value that must never be printed: the upstream password, for one.
 * Logging, JSON-serialising or string-interpolating it yields a placeholder; only
 * `reveal()` gives the value, and only the upstream client calls it.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[secret]';
  }

  toJSON(): string {
    return '[secret]';
  }

  [inspect.custom](): string {
    return '[secret]';
  }
}
