import { Logger } from '@nestjs/common';
import type { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/app-config.js';
import { SubjectHasher } from '../crypto/subject-hash.js';

/** The application's end-user pseudonyms (SUBJECT_HASH_KEYS); without a key and with JWT callers, said once at start. */
export function subjectHasherFrom(config: ConfigService<AppConfig, true>): SubjectHasher {
  const { keys, derivedFrom } = config.get('subjectHash', { infer: true });
  if (keys.length === 0 && derivedFrom.length === 0 && config.get('callers', { infer: true }).jwt) {
    new Logger('SubjectHasher').warn(
      'SUBJECT_HASH_KEYS and STORE_ENCRYPTION_KEYS unset: end users (JWT sub) are recorded as a plain SHA-256, ' +
        'which a guessable sub (a national code, a mobile) does not hide; set one of them',
    );
  }
  return new SubjectHasher(keys, derivedFrom);
}
