/**
 * An inquiry the gateway offers, by its name in the catalog (inquiry/catalog/, docs/api.md §10):
 * the built-ins and the operations the operator adds alike. Which names exist is the catalog's
 * (AppConfig.operations), never a list in the code.
 */
export type InquiryOperation = string;

/** Which upstream suppliers may answer (docs/upstream-api.md §4.4 rules 6-8). */
export const REQUEST_HANDLING_TYPES = ['standard', 'advanced'] as const;
export type RequestHandlingType = (typeof REQUEST_HANDLING_TYPES)[number];
