/**
 * The soak's traffic model (docs/soak.md): seeded, so that a run can be repeated. Each call of
 * `nextRequest` draws one request of the compressed day from the PRNG; nothing here does I/O.
 */

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Requests per second at `phase` (0..1 of the compressed day): morning peak, lunch, night trough. */
export function ratePerSecond(phase: number, peak: number): number {
  const bumps = [
    { at: 0.3, width: 0.08, height: 1 }, // morning peak
    { at: 0.55, width: 0.05, height: 0.6 }, // lunch
    { at: 0.75, width: 0.1, height: 0.7 }, // afternoon
  ];
  const night = 0.08;
  const level = bumps.reduce((sum, b) => sum + b.height * Math.exp(-(((phase - b.at) / b.width) ** 2)), night);
  return Math.max(0.5, peak * Math.min(1, level));
}

/** The share of each kind of request (docs/soak.md's table); they add to 1. */
export const MIX = {
  login: 0.34, // a Shahkar check at login; LOGIN_RECHECK_SHARE of them re-check a recent pair
  payout: 0.2, // an IBAN check before a payout; PAYOUT_RECHECK_SHARE re-check a known IBAN
  advanced: 0.08,
  async: 0.08, // Prefer: respond-async
  idempotentRetry: 0.08, // sent twice under one Idempotency-Key, as after a client timeout
  budgeted: 0.08, // the client with a small daily budget, exhausted during the day
  added: 0.06, // the added operation (INQUIRY_OPERATIONS): card-to-iban
  bad: 0.04, // malformed body, wrong scope, oversized body
  jwtUser: 0.04, // an end user with a JWT
} as const;
export const LOGIN_RECHECK_SHARE = 0.4;
export const PAYOUT_RECHECK_SHARE = 0.5;

export type Kind = keyof typeof MIX;

export interface PlannedRequest {
  kind: Kind;
  path: string;
  body: string;
  headers: Record<string, string>;
  /** Send it twice (the retry after a timeout) under the same Idempotency-Key. */
  twice?: boolean;
}

const digits = (random: () => number, n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join('');

/** A national code with its check digit. */
export function nationalCode(random: () => number): string {
  const body = digits(random, 9);
  const sum = [...body].reduce((s, d, i) => s + Number(d) * (10 - i), 0) % 11;
  return body + String(sum < 2 ? sum : 11 - sum);
}

/** An Iranian IBAN with its ISO 13616 check digits. */
export function iban(random: () => number): string {
  const bban = '0' + digits(random, 21);
  const check = 98n - (BigInt(bban + '182700') % 97n);
  return `IR${String(check).padStart(2, '0')}${bban}`;
}

/** A 16-digit card number with its Luhn digit. */
export function cardNumber(random: () => number): string {
  const body = '6037' + digits(random, 11);
  let sum = 0;
  [...body].reverse().forEach((d, i) => {
    let n = Number(d) * (i % 2 === 0 ? 2 : 1);
    if (n > 9) n -= 9;
    sum += n;
  });
  return body + String((10 - (sum % 10)) % 10);
}

/** The traffic of one run: keeps the recent logins and IBANs so that re-checks re-use them. */
export class TrafficModel {
  private readonly random: () => number;
  private readonly logins: { nationalCode: string; mobileNumber: string }[] = [];
  private readonly ibans: string[] = [];
  private idempotency = 0;

  constructor(seed: number) {
    this.random = prng(seed);
  }

  private kind(): Kind {
    let r = this.random();
    for (const [kind, share] of Object.entries(MIX) as [Kind, number][]) if ((r -= share) < 0) return kind;
    return 'login';
  }

  private pick<T>(list: T[]): T | undefined {
    return list.length ? list[Math.floor(this.random() * list.length)] : undefined;
  }

  private login(): object {
    const again = this.random() < LOGIN_RECHECK_SHARE ? this.pick(this.logins) : undefined;
    const pair = again ?? { nationalCode: nationalCode(this.random), mobileNumber: `09${digits(this.random, 9)}` };
    if (!again) this.logins.push(pair);
    if (this.logins.length > 500) this.logins.shift();
    return pair;
  }

  private payoutIban(): string {
    const again = this.random() < PAYOUT_RECHECK_SHARE ? this.pick(this.ibans) : undefined;
    const value = again ?? iban(this.random);
    if (!again) this.ibans.push(value);
    if (this.ibans.length > 500) this.ibans.shift();
    return value;
  }

  nextRequest(): PlannedRequest {
    const kind = this.kind();
    const json = (path: string, body: object, headers: Record<string, string> = {}): PlannedRequest => ({
      kind,
      path,
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
    });
    // An app asks for an answer at most an hour old at login (docs/api.md §6, reuse).
    const maxAge = { 'cache-control': 'max-age=3600' };
    switch (kind) {
      case 'login':
        return json('/v1/kyc/shahkar', this.login(), maxAge);
      case 'payout':
        return json('/v1/kyc/iban', { iban: this.payoutIban() }, { 'cache-control': 'max-age=86400' });
      case 'advanced':
        return json('/v1/kyc/shahkar', { ...this.login(), requestHandlingType: 'advanced' });
      case 'async':
        return json('/v1/kyc/iban', { iban: iban(this.random) }, { prefer: 'respond-async' });
      case 'idempotentRetry':
        return {
          ...json('/v1/kyc/shahkar', this.login(), { 'idempotency-key': `soak-${++this.idempotency}` }),
          twice: true,
        };
      case 'budgeted':
        return json('/v1/kyc/iban', { iban: iban(this.random) });
      case 'added':
        return json('/v1/kyc/card-to-iban', { cardNumber: cardNumber(this.random) });
      case 'jwtUser':
        return json('/v1/kyc/shahkar', this.login());
      case 'bad': {
        const r = this.random();
        if (r < 0.34)
          return {
            kind,
            path: '/v1/kyc/shahkar',
            body: '{"nationalCode": ',
            headers: { 'content-type': 'application/json' },
          };
        if (r < 0.67) return json('/v1/kyc/shahkar', { ...this.login(), requestHandlingType: 'advanced' });
        return json('/v1/kyc/iban', { iban: 'IR'.padEnd(64 * 1024, '0') });
      }
    }
  }
}
