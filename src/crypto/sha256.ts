import { createHash } from 'node:crypto';

/** Hex SHA-256 of a UTF-8 string: how keys, subjects and fingerprints are stored (never in clear). */
export const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
