/** Values shared by the e2e suites: valid inputs, the sandbox credentials, formats. */

export const NATIONAL_CODE = '0499370899';
export const MOBILE = '09121234567';
export const IBAN = 'IR820540102680020817909002';
/** A valid Shahkar body. */
export const SHAHKAR = { nationalCode: NATIONAL_CODE, mobileNumber: MOBILE };

/** The credentials test/support/gateway.ts starts gateways with (and the simulator's defaults). */
export const UPSTREAM_USERNAME = 'sandbox-user';
export const UPSTREAM_PASSWORD = 'sandbox-password';

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
