/**
 * The inquiries the gateway offers (docs/api.md §2), by its own operation names. Defined here,
 * in the lowest layer that needs them (the upstream client maps each to its path), so that
 * token/ and upstream/ never import from inquiry/ (docs/architecture.md, "Layers").
 */
export const INQUIRY_OPERATIONS = ['shahkar', 'iban'] as const;
export type InquiryOperation = (typeof INQUIRY_OPERATIONS)[number];

/** Which upstream suppliers may answer (docs/upstream-api.md §4.4 rules 6-8). */
export const REQUEST_HANDLING_TYPES = ['standard', 'advanced'] as const;
export type RequestHandlingType = (typeof REQUEST_HANDLING_TYPES)[number];
