import { createHmac, type KeyObject, createSecretKey } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Caller } from '../caller-auth/caller.js';
import type { AppConfig } from '../config/app-config.js';
import type { InquiryOperation } from '../upstream/inquiry-operation.js';
import type { ReusePolicy, ReuseShare } from '../config/reuse-config.js';

/**
 * Whose answers a caller may reuse, as a list of strings (docs/api.md §2, "Partitions"): the
 * share mode, then the credential kind and client id, then for `subject` the JWT's `iss` and
 * `sub`. The kind keeps an API key and a JWT naming the same client apart under `subject` and
 * `client`; `company` is one partition for every caller allowed the operation. Undefined: no
 * partition, so no reuse (a JWT without `sub` under `subject`: it would speak for every user).
 */
export function reusePartition(
  share: ReuseShare,
  caller: Pick<Caller, 'clientId' | 'credential' | 'issuer' | 'subject'>,
): readonly string[] | undefined {
  if (share === 'company') return ['company'];
  const kind = caller.credential === 'jwt' ? 'jwt' : 'key';
  if (share === 'client') return ['client', kind, caller.clientId];
  if (kind === 'key') return ['subject', kind, caller.clientId];
  if (caller.subject === undefined || caller.subject === '') return undefined;
  return ['subject', kind, caller.clientId, caller.issuer ?? '', caller.subject];
}

/** Version of the encoding below: a change of it must change every key (old entries then miss). */
const ENCODING = 'vgw-reuse-v1';

/**
 * The text the question key hashes: the partition, the operation and the normalised fields
 * sorted by name, as one JSON array. JSON's escaping makes the encoding injective (no field
 * value or client id can imitate a separator). `requestHandlingType` is not a field here:
 * stored answers ignore it (docs/api.md §2); the in-flight registry adds it to its own key.
 */
export function canonicalQuestion(
  partition: readonly string[],
  operation: InquiryOperation,
  fields: Readonly<Record<string, string>>,
): string {
  const sorted = Object.keys(fields)
    .sort()
    .map((name) => [name, fields[name]]);
  return JSON.stringify([ENCODING, partition, operation, sorted]);
}

/** HMAC-SHA256 under the key, hex: no national code, mobile or IBAN can be read back from it. */
export function questionKey(key: KeyObject, canonical: string): string {
  return createHmac('sha256', key).update(canonical, 'utf8').digest('hex');
}

/** What reuse needs of one inquiry: its operator's policy and its question key. */
export interface ReuseQuestion {
  policy: ReusePolicy;
  /** 64 hex digits: names the stored answer and the inquiry in flight (answer-store.ts). */
  key: string;
}

/**
 * The question of an inquiry as the answer store knows it (INQUIRY_REUSE, REUSE_HMAC_KEY).
 * `fields` are the request's fields after validation has normalised them (ASCII digits, `09…`
 * mobiles, upper-case IBAN without spaces), without `requestHandlingType`.
 */
@Injectable()
export class ReuseQuestions {
  private readonly operations: AppConfig['reuse']['operations'];
  private readonly key?: KeyObject;

  constructor(config: ConfigService<AppConfig, true>) {
    const reuse = config.get('reuse', { infer: true });
    this.operations = reuse.operations;
    if (reuse.hmacKey) this.key = createSecretKey(Buffer.from(reuse.hmacKey.reveal(), 'utf8'));
  }

  /** The operator's policy for the operation; undefined: never reused. */
  policy(operation: InquiryOperation): ReusePolicy | undefined {
    return this.key ? this.operations[operation] : undefined;
  }

  /** Undefined when the operation is never reused or the caller has no partition under its share. */
  of(caller: Caller, operation: InquiryOperation, fields: Readonly<Record<string, string>>): ReuseQuestion | undefined {
    const policy = this.policy(operation);
    if (!policy || !this.key) return undefined;
    const partition = reusePartition(policy.share, caller);
    if (!partition) return undefined;
    return { policy, key: questionKey(this.key, canonicalQuestion(partition, operation, fields)) };
  }
}
