/**
 * The inquiries the gateway offers (docs/api.md §2), by its own operation names. Defined here,
 * in the lowest layer that needs them (the upstream client maps each to its path), so that
 * token/ and upstream/ never import from inquiry/ (docs/architecture.md, "Layers").
 */
export const INQUIRY_OPERATIONS = ['shahkar', 'iban'] as const;
export type InquiryOperation = (typeof INQUIRY_OPERATIONS)[number];
