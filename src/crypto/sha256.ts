import { hash } from 'node:crypto';

/** Hex SHA-256 of a UTF-8 string: how keys, subjects and fingerprints are stored (never in clear). */
export const sha256 = (text: string): string => hash('sha256', text, 'hex');

/** The raw 32-byte SHA-256, for constant-time comparison (API keys, docs/api.md §1). */
export const sha256Bytes = (text: string): Buffer => hash('sha256', text, 'buffer');
