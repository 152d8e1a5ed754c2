/**
 * In-process simulator of the upstream verification service, API version 5
 * (contract: docs/upstream-api.md). Used directly by the gateway's jest tests
 * and, through `main.ts`, as a stand-alone sandbox.
 *
 * Rules implemented from the contract
 * -----------------------------------
 * - §2.2: every /api/v5 response (errors included) carries the envelope
 *   `{ meta: { trackId, status, isSuccess, code, message, errorMessage, errorType, errors }, data }`
 *   and the header `X-Track-Id` equal to `meta.trackId` (§4.4 rule 4).
 * - §4.1 / §7.1 GetToken, variant A (username/password) and variant B (refreshToken):
 *   400/2/BadRequest for an invalid body or missing username/password; 401/6/UnAuthorized for
 *   wrong credentials, for "Api password has not been set" (exact message) and for an
 *   invalid/expired/revoked refresh token; 403/9/Inaccessible for a disabled account (both
 *   variants); success data `{ accessToken, tokenType: 'Bearer', expiresTn, refreshToken }`.
 *   Rule 4: any call of `setPassword` (set, change or reset) invalidates every refresh token
 *   issued before, at once.
 * - §5.1/§5.4: every /api/v5 web service needs `Authorization: Bearer <accessToken>`, valid for
 *   `expiresTn` seconds, measured with the injectable clock `now`.
 * - §4.4: trackId generated as UUID v4 when omitted (2); invalid or zero UUID → 400 with a field
 *   error on `trackId` (3); echoed in meta and header (4); once only (5); `standard` calls the
 *   first supplier only (6); `advanced` walks on after a supplier failure (7); the credit must
 *   cover the whole advanced chain up front (8); each attempt reserves its cost, failed attempts
 *   release it, only the final successful attempt is charged (9); one log entry per attempt,
 *   linked to the trackId (10); a `requestHandlingType` other than standard/advanced → 400 with a
 *   field error on `requestHandlingType` (11).
 *
 * Choices where the contract is silent ("not shown")
 * --------------------------------------------------
 * Envelope
 * - `meta.status` is 'Success' on success and 'Failed' on every error; `meta.message` and
 *   `meta.errorMessage` hold the same text on errors; `meta.errorMessage` and `meta.errorType`
 *   are null on success, `meta.errors` is [] unless there are field errors.
 * - Elements of `meta.errors` are `{ field: string, message: string }`. Body-level problems
 *   (not JSON, not an object, both variants mixed) use the field name `body`.
 * - `data` is null on every error response.
 * - Codes: 0 Success, 1 ServerError, 2 BadRequest, 3 NotFound, 5 LogicError, 6 UnAuthorized,
 *   9 Inaccessible, 14 RequestTimeOut, 15 ProviderError.
 * Status/code choices
 * - Duplicate trackId: HTTP 409, code 5, LogicError, message 'Duplicate trackId'; the response
 *   echoes the duplicate trackId.
 * - Insufficient credit (standard: the first supplier's cost; advanced: the sum of the chain):
 *   HTTP 402, code 5, LogicError, message 'Insufficient credit'. The trackId is consumed.
 * - All suppliers failed: HTTP 502, code 15, ProviderError ('Supplier error'); when the last
 *   failure was a timeout: HTTP 504, code 14, RequestTimeOut ('Supplier timed out'). The trackId
 *   is consumed, nothing is charged. An empty supplier chain is answered like a supplier error
 *   (502/15, 'No supplier available').
 * - Unknown path (any method) or a known path with a method other than POST: 404, code 3,
 *   NotFound, answered before any Bearer check (routing comes first). A POST to any other
 *   `/api/v5/...` path is one of the upstream's other inquiries (added-operations.ts).
 * - Bearer token of a disabled account on an inquiry: 403, code 9, Inaccessible (same as GetToken).
 * - Request body larger than 1 MiB: 413, code 2, BadRequest.
 * - Any unexpected exception while processing: 500, code 1, ServerError.
 * Authentication
 * - Access tokens issued before `setPassword` stay valid until they expire (only refresh tokens
 *   are invalidated by rule 4). `disableAccount` does not revoke tokens, but every call with them
 *   is answered 403 while the account is disabled.
 * - GetToken check order, variant A: body → username → password never set → password → disabled.
 *   A wrong username is "wrong credentials" even when the password was never set.
 *   Variant B: body → token known and not expired → disabled. With rotation 'single-use' the
 *   refresh token is consumed only when a new pair is actually issued.
 * - A body carrying both `refreshToken` and `username`/`password` is a 400 (ambiguous). A body
 *   with a `refreshToken` key is variant B (counted in `tokenCalls.refresh`), anything else is
 *   counted as variant A (`tokenCalls.credentials`).
 * - The Bearer scheme name is matched case-insensitively (RFC 7235); the token itself exactly.
 * - Paths are case-sensitive; no trailing slash is accepted.
 * Inquiries
 * - Check order: routing → Bearer → disabled account → body validation (all field errors in one
 *   400, message 'One or more validation errors occurred') → duplicate trackId → register the
 *   trackId → credit → supplier chain. A request rejected by auth or validation does not
 *   consume its trackId; responses to those echo the body's trackId when it is a valid UUID,
 *   else carry a freshly generated one.
 * - Any RFC 4122-shaped UUID (8-4-4-4-12 hex, any version, either case) is accepted as trackId;
 *   braces or hyphen-less forms are not. trackIds are compared and echoed lower-cased.
 * - `trackId: null` and `requestHandlingType: null` are treated as omitted.
 *   `requestHandlingType` is case-sensitive ('Advanced' is rejected).
 * - nationalCode, mobileNumber and iban must be non-empty strings; their format is not checked
 *   (the contract gives only the shape). Unknown body fields are ignored.
 * - A request body that is not JSON (bad syntax or another Content-Type) is a 400 (field `body`).
 * - CheckShahkar data: `{ isMatch }` from the configurable matcher (default: always true); a
 *   non-match is a successful, charged inquiry. IbanInquiry data:
 *   `{ iban, bankName, accountStatus: 'ACTIVE', owners: [{ firstName, lastName }] }`, the bank
 *   chosen from the Iranian bank code (characters 5-7 of the IBAN), the owner from a hash of the IBAN.
 * - A supplier 'timeout' is simulated instantly (no real waiting); set `latencyMs` for slowness.
 *   In advanced mode a timeout counts as a supplier error and the chain walks on.
 * - `supplierLatencyMs` is the time each supplier attempt takes (0 by default): an advanced chain
 *   that walks three suppliers answers after three of them, "several times longer" (§4.4.7).
 *   Like `latencyMs` it is applied after processing (the charge is already decided).
 * - A Shahkar matcher that throws gives 500/1/ServerError (trackId consumed, nothing charged).
 * - `inputOutcomes` (the sandbox's documented test data, `SANDBOX_INPUT_OUTCOMES`) scripts the
 *   answer to particular inputs, keyed by the national code or the IBAN as sent: 'no-match'
 *   answers `isMatch: false` (charged, as any non-match); 'suppliers-fail' makes every supplier
 *   attempt fail (502/15 ProviderError, nothing charged); 'first-supplier-fails' fails the first
 *   supplier only, so `standard` answers 502/15 and `advanced` walks on to the next (§4.4.6–7).
 *   A supplier failure set with setSupplierFailure takes precedence.
 * Simulator-only behaviour
 * - A body over 1 MiB is rejected before routing, so it is not counted in tokenCalls/inquiryCalls.
 * - Latency is applied after processing, to every /api/v5 response (errors and faults
 *   'http500'/'malformed' included), never to /__simulator.
 * - Faults apply to the three /api/v5 routes only (GetToken included), first matching fault first; the
 *   'malformed' fault (like 'http500' and 'drop') answers without processing, with HTTP 200,
 *   `Content-Type: application/json` and a truncated JSON body.
 * - For faults that never answer ('drop', 'hang') the 'inquiry' event is emitted when the fault
 *   is decided, with status 0; 'hang-after-processing' emits the status it would have answered.
 *   A 'fault' event `{ path, kind }` is emitted for every fault taken.
 * - Hostile answers: 'deep-data' and 'huge-data' process the request as usual (a success is
 *   charged) and then answer a success envelope whose `data` is nested `DEEP_DATA_LEVELS` deep
 *   (`{"a":{"a":…}}`, about 10 KB), or holds a string of `HUGE_DATA_BYTES` (32 MiB).
 */
import { EventEmitter } from 'node:events';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { fastify, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import {
  addedOperationAnswer,
  addedOperationFieldErrors,
  addedOperationInputs,
  isAddedOperationPath,
} from './added-operations.js';
import { TrackingService } from './tracking-service.js';

export interface Supplier {
  name: string;
  cost: number;
}

export type SupplierFailure = 'error' | 'timeout';
/** A scripted answer to one input (`SimulatorOptions.inputOutcomes`). */
export type InputOutcome = 'no-match' | 'suppliers-fail' | 'first-supplier-fails';
export type RefreshTokenRotation = 'reusable' | 'single-use';
/** Upstream-side checks of field values: returns the field errors of a request body. */
/** `authorization` lets a test play a hostile upstream that echoes the token it was sent. */
export type FieldValidator = (path: string, body: Record<string, unknown>, authorization?: string) => FieldError[];

export type FaultKind = 'http500' | 'hang' | 'drop' | 'malformed' | 'hang-after-processing' | 'deep-data' | 'huge-data';

export interface SimulatorOptions {
  username: string;
  /** null = the API password was never set. */
  password: string | null;
  accessTokenSeconds: number;
  refreshTokenSeconds: number;
  credit: number;
  suppliers: Supplier[];
  latencyMs: number;
  /** Milliseconds each supplier attempt of an inquiry takes (added after processing). */
  supplierLatencyMs: number;
  refreshTokenRotation: RefreshTokenRotation;
  /** Scripted answers by national code (CheckShahkar) or IBAN (IbanInquiry), as sent. */
  inputOutcomes: Readonly<Record<string, InputOutcome>>;
  /** Clock in milliseconds; token expiry is measured with it. */
  now?: () => number;
  /** The other inquiries' paths the simulator knows; unset: any (added-operations.ts). */
  addedOperationPaths?: readonly string[];
}

export interface FaultSpec {
  /** Exact path (e.g. '/api/v5/KYC/CheckShahkar'); default: any /api/v5 path. */
  path?: string;
  kind: FaultKind;
  /** How many requests the fault applies to; default 1. */
  times?: number;
}

export interface FieldError {
  field: string;
  message: string;
}

export interface Meta {
  trackId: string;
  status: string;
  isSuccess: boolean;
  code: number;
  message: string;
  errorMessage: string | null;
  errorType: string | null;
  errors: FieldError[];
}

export interface Envelope<T = unknown> {
  meta: Meta;
  data: T | null;
}

export interface TokenData {
  accessToken: string;
  tokenType: 'Bearer';
  expiresTn: number;
  refreshToken: string;
}

export interface RecordedRequest {
  path: string;
  body: unknown;
  authorization?: string;
  /** W3C Trace Context headers as received (tracing tests). */
  traceparent?: string;
  tracestate?: string;
  trackId?: string;
  at: number;
}

export interface AttemptLogEntry {
  trackId: string;
  supplier: string;
  outcome: 'success' | 'error' | 'timeout';
}

export interface TokenCalls {
  credentials: number;
  refresh: number;
  failed: number;
}

export interface TokenEvent {
  variant: 'credentials' | 'refresh';
  ok: boolean;
  status: number;
}

export interface InquiryEvent {
  path: string;
  trackId: string;
  /** HTTP status answered; 0 when the fault 'drop' or 'hang' means nothing is answered. */
  status: number;
  code: number | null;
  fault?: FaultKind;
}

export interface FaultEvent {
  path: string;
  kind: FaultKind;
}

export interface UpstreamSimulatorEvents {
  token: [TokenEvent];
  inquiry: [InquiryEvent];
  fault: [FaultEvent];
}

export const API_PREFIX = '/api/v5';
export const GET_TOKEN_PATH = '/api/v5/Authentication/GetToken';
export const CHECK_SHAHKAR_PATH = '/api/v5/KYC/CheckShahkar';
export const IBAN_INQUIRY_PATH = '/api/v5/KYC/IbanInquiry';
export const CONTROL_PREFIX = '/__simulator';

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BEARER_RE = /^Bearer[ ]+(\S+)[ ]*$/i;
const FAULT_KINDS: readonly FaultKind[] = [
  'http500',
  'hang',
  'drop',
  'malformed',
  'hang-after-processing',
  'deep-data',
  'huge-data',
];

/** `deep-data`: a `data` object nested this deep (about 10 KB of JSON). */
export const DEEP_DATA_LEVELS = 2000;
/** `huge-data`: a `data` holding a string of this many bytes (32 MiB). */
export const HUGE_DATA_BYTES = 32 * 1024 * 1024;

/** Marker for a request body that is not valid JSON. */
const INVALID_BODY = Symbol('invalid-body');

export const DEFAULT_SUPPLIERS: readonly Supplier[] = Object.freeze([
  { name: 'primary', cost: 100 },
  { name: 'secondary', cost: 120 },
  { name: 'tertiary', cost: 150 },
]);

const DEFAULT_OPTIONS: Omit<SimulatorOptions, 'suppliers' | 'now'> = {
  username: 'sandbox-user',
  password: 'sandbox-password',
  accessTokenSeconds: 28800,
  refreshTokenSeconds: 365 * 24 * 3600,
  credit: 1_000_000,
  latencyMs: 0,
  supplierLatencyMs: 0,
  refreshTokenRotation: 'reusable',
  inputOutcomes: {},
};

/**
 * The sandbox's test data (docs/local-stack.md, "Test data"): inputs with valid check digits that
 * answer something other than a match. `npm run sandbox`, `npm run simulator` and the compose
 * stack's simulator answer them; a simulator constructed without `inputOutcomes` does not.
 */
export const SANDBOX_INPUT_OUTCOMES: Readonly<Record<string, InputOutcome>> = Object.freeze({
  '0499370902': 'no-match',
  '0499370910': 'suppliers-fail',
  '0499370929': 'first-supplier-fails',
  IR490170000000000000000002: 'suppliers-fail',
  IR140540000000000000000003: 'first-supplier-fails',
});

const BANKS: Record<string, string> = {
  '010': 'Central Bank of Iran',
  '011': 'Sanat va Madan Bank',
  '012': 'Bank Mellat',
  '013': 'Refah Kargaran Bank',
  '014': 'Bank Maskan',
  '015': 'Bank Sepah',
  '016': 'Bank Keshavarzi',
  '017': 'Bank Melli Iran',
  '018': 'Tejarat Bank',
  '019': 'Bank Saderat Iran',
  '020': 'Export Development Bank of Iran',
  '021': 'Post Bank of Iran',
  '054': 'Parsian Bank',
  '055': 'EN Bank',
  '056': 'Saman Bank',
  '057': 'Bank Pasargad',
  '062': 'Ayandeh Bank',
};
const FIRST_NAMES = ['Ali', 'Maryam', 'Reza', 'Zahra', 'Hossein', 'Fatemeh', 'Mohammad', 'Sara'];
const LAST_NAMES = ['Ahmadi', 'Hosseini', 'Karimi', 'Rezaei', 'Moradi', 'Jafari', 'Mohammadi', 'Rahimi'];

interface AccessTokenRecord {
  expiresAt: number;
}
interface RefreshTokenRecord {
  expiresAt: number;
}

/** A decided outcome, ready to be sent. */
interface Outcome {
  http: number;
  body: Envelope;
  trackId: string;
  ok: boolean;
}

class ApiError extends Error {
  constructor(
    readonly http: number,
    readonly code: number,
    readonly errorType: string,
    message: string,
    readonly errors: FieldError[] = [],
    readonly trackId?: string,
  ) {
    super(message);
  }
}

interface PendingFault {
  path?: string;
  kind: FaultKind;
  remaining: number;
}

interface ResponseInfo {
  kind: 'token' | 'inquiry';
  variant: 'credentials' | 'refresh';
  path: string;
  trackId: string;
  code: number | null;
  ok: boolean;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** CheckShahkar or IbanInquiry; any other inquiry path is an added one (added-operations.ts). */
function isBuiltIn(path: string): boolean {
  return path === CHECK_SHAHKAR_PATH || path === IBAN_INQUIRY_PATH;
}

function isNonEmptyString(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

function isValidTrackId(v: unknown): v is string {
  return typeof v === 'string' && UUID_RE.test(v) && v.toLowerCase() !== ZERO_UUID;
}

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

function successEnvelope<T>(trackId: string, data: T): Envelope<T> {
  return {
    meta: {
      trackId,
      status: 'Success',
      isSuccess: true,
      code: 0,
      message: 'Operation completed successfully',
      errorMessage: null,
      errorType: null,
      errors: [],
    },
    data,
  };
}

function errorEnvelope(trackId: string, err: ApiError): Envelope {
  return {
    meta: {
      trackId,
      status: 'Failed',
      isSuccess: false,
      code: err.code,
      message: err.message,
      errorMessage: err.message,
      errorType: err.errorType,
      errors: err.errors,
    },
    data: null,
  };
}

const badRequest = (message: string, errors: FieldError[] = []) => new ApiError(400, 2, 'BadRequest', message, errors);
const unauthorized = (message: string, trackId?: string) => new ApiError(401, 6, 'UnAuthorized', message, [], trackId);
const inaccessible = (message: string, trackId?: string) => new ApiError(403, 9, 'Inaccessible', message, [], trackId);
const notFound = () => new ApiError(404, 3, 'NotFound', 'Resource not found');
const serverError = () => new ApiError(500, 1, 'ServerError', 'Internal server error');

function validateSuppliers(suppliers: readonly Supplier[]): Supplier[] {
  if (!Array.isArray(suppliers)) throw new TypeError('suppliers must be an array');
  const names = new Set<string>();
  return suppliers.map((s) => {
    if (!isPlainObject(s) || !isNonEmptyString(s.name)) throw new TypeError('supplier name must be a non-empty string');
    if (typeof s.cost !== 'number' || !Number.isFinite(s.cost) || s.cost < 0) {
      throw new TypeError(`supplier ${s.name}: cost must be a finite number >= 0`);
    }
    if (names.has(s.name)) throw new TypeError(`duplicate supplier name ${s.name}`);
    names.add(s.name);
    return { name: s.name, cost: s.cost };
  });
}

export class UpstreamSimulator extends EventEmitter<UpstreamSimulatorEvents> {
  private readonly options: Omit<SimulatorOptions, 'now'>;
  private readonly now: () => number;

  private app: FastifyInstance | undefined;
  private url: string | undefined;

  // Account and token state
  private password!: string | null;
  private disabled!: boolean;
  private accessSeconds!: number;
  private refreshSeconds!: number;
  private accessTokens!: Map<string, AccessTokenRecord>;
  private refreshTokens!: Map<string, RefreshTokenRecord>;

  // Billing and suppliers
  private balance!: number;
  private reserved!: number;
  private suppliers!: Supplier[];
  private supplierFailures!: Map<string, SupplierFailure>;
  private usedTrackIds!: Set<string>;
  private shahkarMatcher!: (nationalCode: string, mobile: string) => boolean;
  private fieldValidator: FieldValidator = () => [];
  private echoSecrets = false;
  private readonly _issuedTokenValues: string[] = [];

  // Simulator controls
  private latency!: number;
  private supplierLatency!: number;
  private faults!: PendingFault[];

  // Observations
  private _tokenCalls!: TokenCalls;
  private _inquiryCalls!: number;
  private _requests!: RecordedRequest[];
  private _charges!: Map<string, number>;
  private _chargedAt!: Map<string, number>;
  private _attemptLog!: AttemptLogEntry[];
  private _issuedAccessTokens!: number;
  private _rejectedExpiredTokens!: number;

  // Requests held open by 'hang' faults, and latency waits, released by stop()
  private readonly held = new Set<IncomingMessage>();
  private readonly waits = new Set<() => void>();
  private readonly responseInfo = new WeakMap<IncomingMessage, ResponseInfo>();

  /** The request-tracking services (tracking-service.ts), answering from the charges below. */
  readonly tracking = new TrackingService({
    acceptsBearer: (authorization) => this.acceptsBearer(authorization),
    received: (trackId) => this.usedTrackIds.has(trackId.toLowerCase()),
    chargeCount: (trackId) => this.chargeCount(trackId),
  });

  constructor(options: Partial<SimulatorOptions> = {}) {
    super();
    const { now, ...rest } = options;
    this.now = now ?? Date.now;
    this.options = {
      ...DEFAULT_OPTIONS,
      ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)),
      suppliers: validateSuppliers(options.suppliers ?? DEFAULT_SUPPLIERS),
    };
    this.reset();
  }

  // ---------------------------------------------------------------- lifecycle

  get baseUrl(): string {
    if (!this.url) throw new Error('UpstreamSimulator is not started');
    return this.url;
  }

  async start(port = 0, host = '127.0.0.1'): Promise<string> {
    if (this.app) throw new Error('UpstreamSimulator is already started');
    const app = this.buildApp();
    await app.listen({ port, host });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('unexpected server address');
    this.app = app;
    const shownHost =
      host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
    this.url = `http://${shownHost}:${address.port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const app = this.app;
    if (!app) return;
    this.app = undefined;
    this.url = undefined;
    for (const req of this.held) req.socket.destroy();
    this.held.clear();
    for (const release of this.waits) release();
    this.waits.clear();
    await app.close();
  }

  // ---------------------------------------------------------------- controls

  /** Sets, changes or resets (null) the API password. Every refresh token issued before is
   * invalid at once (§4.1 rule 4); access tokens issued before stay valid until they expire. */
  setPassword(password: string | null): void {
    this.password = password;
    this.refreshTokens.clear();
  }

  /** Error messages echo the credentials they were sent (a hostile upstream; logging tests). */
  setEchoSecrets(echo = true): void {
    this.echoSecrets = echo;
  }

  disableAccount(disabled = true): void {
    this.disabled = disabled;
  }

  /** Applies to tokens issued from now on. */
  setTokenLifetimes(lifetimes: { accessSeconds?: number; refreshSeconds?: number }): void {
    if (lifetimes.accessSeconds !== undefined) this.accessSeconds = lifetimes.accessSeconds;
    if (lifetimes.refreshSeconds !== undefined) this.refreshSeconds = lifetimes.refreshSeconds;
  }

  /** Every access token issued so far becomes expired (still known, so counted in rejectedExpiredTokens). */
  expireAllAccessTokens(): void {
    for (const rec of this.accessTokens.values()) rec.expiresAt = Number.NEGATIVE_INFINITY;
  }

  revokeAllRefreshTokens(): void {
    this.refreshTokens.clear();
  }

  setCredit(credit: number): void {
    this.balance = credit;
  }

  /** Current balance (charges deducted). */
  get credit(): number {
    return this.balance;
  }

  setLatency(ms: number): void {
    this.latency = Math.max(0, ms);
  }

  setSupplierLatency(ms: number): void {
    this.supplierLatency = Math.max(0, ms);
  }

  setSuppliers(suppliers: Supplier[]): void {
    this.suppliers = validateSuppliers(suppliers);
  }

  setSupplierFailure(name: string, failure: SupplierFailure | null): void {
    if (failure === null) this.supplierFailures.delete(name);
    else this.supplierFailures.set(name, failure);
  }

  injectFault(fault: FaultSpec): void {
    if (!FAULT_KINDS.includes(fault.kind)) throw new TypeError(`unknown fault kind ${String(fault.kind)}`);
    const times = fault.times ?? 1;
    if (!(times >= 1)) throw new TypeError('fault times must be >= 1');
    this.faults.push({ path: fault.path, kind: fault.kind, remaining: times });
  }

  /** Drops the faults not yet taken: a test that failed before its request came leaves none to the next. */
  clearFaults(): void {
    this.faults = [];
  }

  /**
   * Value checks the upstream applies after its shape checks (the contract shows none):
   * errors returned here are answered 400, code 2, BadRequest, without using the trackId.
   */
  setFieldValidator(fn: FieldValidator): void {
    this.fieldValidator = fn;
  }

  /** Every access and refresh token issued so far, for tests that look for leaks. */
  get issuedTokenValues(): readonly string[] {
    return this._issuedTokenValues;
  }

  setShahkarMatcher(fn: (nationalCode: string, mobile: string) => boolean): void {
    this.shahkarMatcher = fn;
  }

  /** Counters and state back to the constructor options (tokens, trackIds, faults, failures,
   * matcher included). A running server keeps running. */
  reset(): void {
    const o = this.options;
    this.password = o.password;
    this.disabled = false;
    this.accessSeconds = o.accessTokenSeconds;
    this.refreshSeconds = o.refreshTokenSeconds;
    this.accessTokens = new Map();
    this.refreshTokens = new Map();
    this.balance = o.credit;
    this.reserved = 0;
    this.suppliers = o.suppliers.map((s) => ({ ...s }));
    this.supplierFailures = new Map();
    this.usedTrackIds = new Set();
    this.shahkarMatcher = () => true;
    this.fieldValidator = () => [];
    this.echoSecrets = false;
    this.latency = o.latencyMs;
    this.supplierLatency = o.supplierLatencyMs;
    this.faults = [];
    this._tokenCalls = { credentials: 0, refresh: 0, failed: 0 };
    this._inquiryCalls = 0;
    this._requests = [];
    this._charges = new Map();
    this._chargedAt = new Map();
    this._attemptLog = [];
    this._issuedAccessTokens = 0;
    this._rejectedExpiredTokens = 0;
    this.tracking.reset();
  }

  /** §5.1: a Bearer token this simulator issued and that has not expired. */
  acceptsBearer(authorization: string | undefined): boolean {
    const match = BEARER_RE.exec(authorization ?? '');
    const token = match ? this.accessTokens.get(match[1]) : undefined;
    return token !== undefined && this.now() < token.expiresAt && !this.disabled;
  }

  // ---------------------------------------------------------------- observations

  get tokenCalls(): Readonly<TokenCalls> {
    return this._tokenCalls;
  }
  get inquiryCalls(): number {
    return this._inquiryCalls;
  }
  get requests(): readonly RecordedRequest[] {
    return this._requests;
  }
  get chargesByTrackId(): ReadonlyMap<string, number> {
    return this._charges;
  }
  /** When each trackId was first charged (the simulator's clock, ms): the soak's reuse rule reads it. */
  get chargedAt(): ReadonlyMap<string, number> {
    return this._chargedAt;
  }
  chargeCount(trackId: string): number {
    return this._charges.get(trackId.toLowerCase()) ?? 0;
  }
  get attemptLog(): readonly AttemptLogEntry[] {
    return this._attemptLog;
  }
  get issuedAccessTokens(): number {
    return this._issuedAccessTokens;
  }
  get rejectedExpiredTokens(): number {
    return this._rejectedExpiredTokens;
  }
  get latencyMs(): number {
    return this.latency;
  }

  get supplierLatencyMs(): number {
    return this.supplierLatency;
  }

  /** JSON-friendly snapshot (also served at GET /__simulator/state). */
  snapshot() {
    return {
      credit: this.balance,
      reserved: this.reserved,
      passwordSet: this.password !== null,
      disabled: this.disabled,
      accessTokenSeconds: this.accessSeconds,
      refreshTokenSeconds: this.refreshSeconds,
      latencyMs: this.latency,
      supplierLatencyMs: this.supplierLatency,
      suppliers: this.suppliers.map((s) => ({ ...s, failure: this.supplierFailures.get(s.name) ?? null })),
      pendingFaults: this.faults.map((f) => ({ path: f.path ?? null, kind: f.kind, remaining: f.remaining })),
      tokenCalls: { ...this._tokenCalls },
      inquiryCalls: this._inquiryCalls,
      issuedAccessTokens: this._issuedAccessTokens,
      rejectedExpiredTokens: this._rejectedExpiredTokens,
      charges: Object.fromEntries(this._charges),
      trackingQuestions: this.tracking.questions.map((q) => ({ ...q })),
      attemptLog: this._attemptLog.map((a) => ({ ...a })),
      requests: this._requests.map((r) => ({ ...r })),
    };
  }

  // ---------------------------------------------------------------- HTTP

  private buildApp(): FastifyInstance {
    const app = fastify({ logger: false, forceCloseConnections: true, bodyLimit: 1024 * 1024 });

    // One parser for every content type: the handlers decide what an invalid body means, so the
    // Bearer check can come before body validation.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
      const type = String(req.headers['content-type'] ?? '').toLowerCase();
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (!/^application\/([a-z0-9.+-]*\+)?json\b/.test(type)) {
        done(null, text.length === 0 ? undefined : INVALID_BODY);
        return;
      }
      if (text.trim().length === 0) {
        done(null, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text));
      } catch {
        done(null, INVALID_BODY);
      }
    });

    app.addHook('onResponse', async (request, reply) => {
      const info = this.responseInfo.get(request.raw);
      if (!info) return;
      this.responseInfo.delete(request.raw);
      this.emitAnswered(info, reply.statusCode);
    });

    app.setErrorHandler(async (error: { statusCode?: number }, request, reply) => {
      const err =
        error.statusCode === 413 ? new ApiError(413, 2, 'BadRequest', 'Request body too large') : serverError();
      const trackId = randomUUID();
      return reply.code(err.http).header('X-Track-Id', trackId).send(errorEnvelope(trackId, err));
    });

    app.setNotFoundHandler(async (request, reply) => {
      if (request.url.startsWith(CONTROL_PREFIX)) return reply.code(404).send({ error: 'unknown control endpoint' });
      const trackId = randomUUID();
      return reply.code(404).header('X-Track-Id', trackId).send(errorEnvelope(trackId, notFound()));
    });

    app.post(GET_TOKEN_PATH, (request, reply) => this.handleApi('token', request, reply));
    app.post(CHECK_SHAHKAR_PATH, (request, reply) => this.handleApi('inquiry', request, reply));
    app.post(IBAN_INQUIRY_PATH, (request, reply) => this.handleApi('inquiry', request, reply));
    app.post(`${API_PREFIX}/*`, (request, reply) =>
      isAddedOperationPath(request.url.split('?')[0], this.options.addedOperationPaths)
        ? this.handleApi('inquiry', request, reply)
        : reply.callNotFound(),
    );

    this.registerControl(app);
    this.tracking.register(app, CONTROL_PREFIX);
    return app;
  }

  private emitAnswered(info: ResponseInfo, status: number, fault?: FaultKind): void {
    if (info.kind === 'token') {
      this.emit('token', { variant: info.variant, ok: info.ok, status });
    } else {
      const event: InquiryEvent = { path: info.path, trackId: info.trackId, status, code: info.code };
      if (fault) event.fault = fault;
      this.emit('inquiry', event);
    }
  }

  private takeFault(path: string): FaultKind | undefined {
    const index = this.faults.findIndex((f) => f.path === undefined || f.path === path);
    if (index < 0) return undefined;
    const fault = this.faults[index];
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    this.emit('fault', { path, kind: fault.kind });
    return fault.kind;
  }

  private async handleApi(kind: 'token' | 'inquiry', request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const path = request.url.split('?')[0];
    const body: unknown = request.body;
    const variant: 'credentials' | 'refresh' =
      isPlainObject(body) && 'refreshToken' in body ? 'refresh' : 'credentials';
    const bodyTrackId = isPlainObject(body) && isValidTrackId(body.trackId) ? body.trackId.toLowerCase() : undefined;

    if (kind === 'token') {
      this._tokenCalls[variant] += 1;
    } else {
      this._inquiryCalls += 1;
      const authorization = request.headers.authorization;
      const rawTrackId = isPlainObject(body) && typeof body.trackId === 'string' ? body.trackId : undefined;
      this._requests.push({
        path,
        body: body === INVALID_BODY ? '<invalid JSON>' : structuredClone(body),
        ...(authorization !== undefined ? { authorization } : {}),
        ...(typeof request.headers.traceparent === 'string' ? { traceparent: request.headers.traceparent } : {}),
        ...(typeof request.headers.tracestate === 'string' ? { tracestate: request.headers.tracestate } : {}),
        ...(rawTrackId !== undefined ? { trackId: rawTrackId } : {}),
        at: this.now(),
      });
    }

    const fault = this.takeFault(path);
    const attemptsBefore = this._attemptLog.length;
    let outcome: Outcome;
    if (fault === 'drop' || fault === 'hang') {
      if (kind === 'token') this._tokenCalls.failed += 1;
      const info: ResponseInfo = { kind, variant, path, trackId: bodyTrackId ?? '', code: null, ok: false };
      reply.hijack();
      if (fault === 'drop') request.raw.socket.destroy();
      else this.hold(request.raw);
      this.emitAnswered(info, 0, fault);
      return undefined;
    } else if (fault === 'http500') {
      const trackId = bodyTrackId ?? randomUUID();
      outcome = { http: 500, body: errorEnvelope(trackId, serverError()), trackId, ok: false };
    } else if (fault === 'malformed') {
      outcome = { http: 200, body: successEnvelope('', null), trackId: bodyTrackId ?? randomUUID(), ok: false };
    } else {
      outcome = this.process(kind, path, body, request.headers.authorization, bodyTrackId);
    }
    // The supplier attempts this request made (each takes supplierLatencyMs).
    const attempts = this._attemptLog.length - attemptsBefore;

    if (kind === 'token' && !outcome.ok) this._tokenCalls.failed += 1;
    const code = fault === 'malformed' ? null : outcome.body.meta.code;
    const info: ResponseInfo = { kind, variant, path, trackId: outcome.trackId, code, ok: outcome.ok };

    if (fault === 'hang-after-processing') {
      reply.hijack();
      this.hold(request.raw);
      this.emitAnswered(info, outcome.http, fault);
      return undefined;
    }

    await this.delay(this.latency + attempts * this.supplierLatency);
    this.responseInfo.set(request.raw, info);
    reply.code(outcome.http).header('X-Track-Id', outcome.trackId);
    if (fault === 'malformed') {
      return reply
        .header('Content-Type', 'application/json; charset=utf-8')
        .send(`{"meta":{"trackId":"${outcome.trackId}","status":"Succ`);
    }
    if ((fault === 'deep-data' || fault === 'huge-data') && outcome.ok) {
      const meta = JSON.stringify(outcome.body.meta);
      const data =
        fault === 'deep-data'
          ? '{"a":'.repeat(DEEP_DATA_LEVELS) + '1' + '}'.repeat(DEEP_DATA_LEVELS)
          : `{"blob":"${'x'.repeat(HUGE_DATA_BYTES)}"}`;
      return reply.header('Content-Type', 'application/json; charset=utf-8').send(`{"meta":${meta},"data":${data}}`);
    }
    return reply.send(outcome.body);
  }

  /** Keeps a request open without answering until the client goes away or stop() is called. */
  private hold(req: IncomingMessage): void {
    this.held.add(req);
    req.socket.once('close', () => this.held.delete(req));
  }

  private delay(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.waits.delete(release);
        resolve();
      };
      const timer = setTimeout(release, ms);
      this.waits.add(release);
    });
  }

  private process(
    kind: 'token' | 'inquiry',
    path: string,
    body: unknown,
    authorization: string | undefined,
    bodyTrackId: string | undefined,
  ): Outcome {
    try {
      if (kind === 'token') {
        const trackId = randomUUID();
        const data = this.getToken(body);
        return { http: 200, body: successEnvelope(trackId, data), trackId, ok: true };
      }
      return this.inquiry(path, body, authorization, bodyTrackId);
    } catch (e) {
      const err = e instanceof ApiError ? e : serverError();
      const trackId = err.trackId ?? (kind === 'inquiry' ? bodyTrackId : undefined) ?? randomUUID();
      return { http: err.http, body: errorEnvelope(trackId, err), trackId, ok: false };
    }
  }

  // ---------------------------------------------------------------- §4.1 GetToken

  private getToken(body: unknown): TokenData {
    if (!isPlainObject(body)) {
      throw badRequest('Request body is invalid', [{ field: 'body', message: 'Request body must be a JSON object' }]);
    }
    if ('refreshToken' in body) {
      if (body.username !== undefined || body.password !== undefined) {
        throw badRequest('Request body is invalid', [
          { field: 'body', message: 'Send either username and password, or refreshToken, not both' },
        ]);
      }
      if (!isNonEmptyString(body.refreshToken)) {
        throw badRequest('Request body is invalid', [
          { field: 'refreshToken', message: 'refreshToken must be a non-empty string' },
        ]);
      }
      const rec = this.refreshTokens.get(body.refreshToken);
      if (!rec) throw unauthorized('Refresh token is invalid');
      if (this.now() >= rec.expiresAt) {
        this.refreshTokens.delete(body.refreshToken);
        throw unauthorized('Refresh token has expired');
      }
      if (this.disabled) throw inaccessible('User account is disabled');
      if (this.options.refreshTokenRotation === 'single-use') this.refreshTokens.delete(body.refreshToken);
      return this.issueTokens();
    }

    const errors: FieldError[] = [];
    if (!isNonEmptyString(body.username)) errors.push({ field: 'username', message: 'username is required' });
    if (!isNonEmptyString(body.password)) errors.push({ field: 'password', message: 'password is required' });
    if (errors.length > 0) throw badRequest('Username and password are required', errors);
    // A hostile upstream (setEchoSecrets) repeats what it was sent, as some real ones do.
    const incorrect = this.echoSecrets
      ? `Login failed for user ${String(body.username)} with password ${String(body.password)}`
      : 'Username or password is incorrect';
    if (body.username !== this.options.username) throw unauthorized(incorrect);
    if (this.password === null) throw unauthorized('Api password has not been set');
    if (body.password !== this.password) throw unauthorized(incorrect);
    if (this.disabled) throw inaccessible('User account is disabled');
    return this.issueTokens();
  }

  private issueTokens(): TokenData {
    const now = this.now();
    const accessToken = newToken();
    const refreshToken = newToken();
    this.accessTokens.set(accessToken, { expiresAt: now + this.accessSeconds * 1000 });
    this.refreshTokens.set(refreshToken, { expiresAt: now + this.refreshSeconds * 1000 });
    this._issuedAccessTokens += 1;
    this._issuedTokenValues.push(accessToken, refreshToken);
    return { accessToken, tokenType: 'Bearer', expiresTn: this.accessSeconds, refreshToken };
  }

  // ---------------------------------------------------------------- §4.2/§4.4 inquiries

  private inquiry(
    path: string,
    body: unknown,
    authorization: string | undefined,
    bodyTrackId: string | undefined,
  ): Outcome {
    // §5.1 Bearer
    if (authorization === undefined || authorization === '') {
      throw unauthorized('Authorization header with a Bearer token is required', bodyTrackId);
    }
    const match = BEARER_RE.exec(authorization);
    if (!match) throw unauthorized('Authorization header must use the Bearer scheme', bodyTrackId);
    const token = this.accessTokens.get(match[1]);
    if (!token) throw unauthorized('Access token is invalid', bodyTrackId);
    if (this.now() >= token.expiresAt) {
      this._rejectedExpiredTokens += 1;
      throw unauthorized('Access token has expired', bodyTrackId);
    }
    if (this.disabled) throw inaccessible('User account is disabled', bodyTrackId);

    // Body validation
    if (!isPlainObject(body)) {
      throw badRequest('Request body is invalid', [{ field: 'body', message: 'Request body must be a JSON object' }]);
    }
    const errors: FieldError[] = [];
    if (body.trackId !== undefined && body.trackId !== null && !isValidTrackId(body.trackId)) {
      errors.push({ field: 'trackId', message: 'trackId must be a valid, non-zero UUID' });
    }
    const handling = body.requestHandlingType ?? 'standard';
    if (handling !== 'standard' && handling !== 'advanced') {
      errors.push({ field: 'requestHandlingType', message: "requestHandlingType must be 'standard' or 'advanced'" });
    }
    if (!isBuiltIn(path)) errors.push(...addedOperationFieldErrors(body));
    const required =
      path === CHECK_SHAHKAR_PATH ? ['nationalCode', 'mobileNumber'] : path === IBAN_INQUIRY_PATH ? ['iban'] : [];
    for (const field of required) {
      if (!isNonEmptyString(body[field]))
        errors.push({ field, message: `${field} is required and must be a non-empty string` });
    }
    // The upstream's own checks of the field values ("not shown" in the contract): none by
    // default; tests install rules with setFieldValidator to get its 400 answers.
    if (errors.length === 0) errors.push(...this.fieldValidator(path, body, authorization));
    if (errors.length > 0) throw badRequest('One or more validation errors occurred', errors);

    // §4.4 rules 2 and 5: trackId
    const trackId = bodyTrackId ?? randomUUID();
    if (this.usedTrackIds.has(trackId)) throw new ApiError(409, 5, 'LogicError', 'Duplicate trackId', [], trackId);
    this.usedTrackIds.add(trackId);

    // §4.4 rules 6-8: chain and credit
    const chain = handling === 'advanced' ? [...this.suppliers] : this.suppliers.slice(0, 1);
    if (chain.length === 0) throw new ApiError(502, 15, 'ProviderError', 'No supplier available', [], trackId);
    const needed = chain.reduce((sum, s) => sum + s.cost, 0);
    if (this.balance - this.reserved < needed)
      throw new ApiError(402, 5, 'LogicError', 'Insufficient credit', [], trackId);

    // §4.4 rules 9-10: attempts
    const scripted = this.inputOutcome(path, body);
    let lastFailure: SupplierFailure = 'error';
    for (const [index, supplier] of chain.entries()) {
      const failure =
        this.supplierFailures.get(supplier.name) ??
        (scripted === 'suppliers-fail' || (scripted === 'first-supplier-fails' && index === 0) ? 'error' : undefined);
      let data: unknown;
      this.reserved += supplier.cost; // reservation held for the duration of the attempt
      try {
        if (!failure) data = this.answer(path, body);
      } finally {
        this.reserved -= supplier.cost; // released; charged below only on success
      }
      if (failure) {
        this._attemptLog.push({ trackId, supplier: supplier.name, outcome: failure });
        lastFailure = failure;
        continue;
      }
      this.balance -= supplier.cost;
      this._charges.set(trackId, (this._charges.get(trackId) ?? 0) + 1);
      if (!this._chargedAt.has(trackId)) this._chargedAt.set(trackId, this.now());
      this._attemptLog.push({ trackId, supplier: supplier.name, outcome: 'success' });
      return { http: 200, body: successEnvelope(trackId, data), trackId, ok: true };
    }
    if (lastFailure === 'timeout') throw new ApiError(504, 14, 'RequestTimeOut', 'Supplier timed out', [], trackId);
    throw new ApiError(502, 15, 'ProviderError', 'Supplier error', [], trackId);
  }

  private inputOutcome(path: string, body: Record<string, unknown>): InputOutcome | undefined {
    const inputs = !isBuiltIn(path)
      ? addedOperationInputs(body)
      : [String(path === CHECK_SHAHKAR_PATH ? body.nationalCode : body.iban)];
    const scripted = inputs.find((input) => Object.hasOwn(this.options.inputOutcomes, input));
    return scripted === undefined ? undefined : this.options.inputOutcomes[scripted];
  }

  private answer(path: string, body: Record<string, unknown>): unknown {
    if (!isBuiltIn(path)) return addedOperationAnswer(path, body, this.inputOutcome(path, body) === 'no-match');
    if (path === CHECK_SHAHKAR_PATH) {
      if (this.inputOutcome(path, body) === 'no-match') return { isMatch: false };
      return { isMatch: this.shahkarMatcher(String(body.nationalCode), String(body.mobileNumber)) === true };
    }
    const iban = String(body.iban);
    const digits = iban.replace(/\s+/g, '').toUpperCase();
    const bankName = BANKS[digits.slice(4, 7)] ?? 'Unknown Bank';
    const hash = createHash('sha256').update(digits).digest();
    return {
      iban,
      bankName,
      accountStatus: 'ACTIVE',
      owners: [
        { firstName: FIRST_NAMES[hash[0] % FIRST_NAMES.length], lastName: LAST_NAMES[hash[1] % LAST_NAMES.length] },
      ],
    };
  }

  // ---------------------------------------------------------------- /__simulator control surface

  private registerControl(app: FastifyInstance): void {
    const bad = (reply: FastifyReply, message: string) => reply.code(400).send({ error: message });
    const obj = (request: FastifyRequest): Record<string, unknown> => (isPlainObject(request.body) ? request.body : {});
    const ok = () => ({ ok: true, state: this.snapshot() });

    app.get(`${CONTROL_PREFIX}/state`, () => this.snapshot());
    app.post(`${CONTROL_PREFIX}/reset`, () => {
      this.reset();
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/password`, async (request, reply) => {
      const { password } = obj(request);
      if (password !== null && typeof password !== 'string') return bad(reply, 'password must be a string or null');
      this.setPassword(password);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/disable`, async (request, reply) => {
      const { disabled = true } = obj(request);
      if (typeof disabled !== 'boolean') return bad(reply, 'disabled must be a boolean');
      this.disableAccount(disabled);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/credit`, async (request, reply) => {
      const { credit } = obj(request);
      if (typeof credit !== 'number' || !Number.isFinite(credit)) return bad(reply, 'credit must be a number');
      this.setCredit(credit);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/fault`, async (request, reply) => {
      const { path, kind, times } = obj(request);
      if (path !== undefined && typeof path !== 'string') return bad(reply, 'path must be a string');
      if (!FAULT_KINDS.includes(kind as FaultKind)) return bad(reply, `kind must be one of ${FAULT_KINDS.join(', ')}`);
      if (times !== undefined && (typeof times !== 'number' || !(times >= 1)))
        return bad(reply, 'times must be a number >= 1');
      this.injectFault({ path, kind: kind as FaultKind, times });
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/latency`, async (request, reply) => {
      const { ms } = obj(request);
      if (typeof ms !== 'number' || !(ms >= 0)) return bad(reply, 'ms must be a number >= 0');
      this.setLatency(ms);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/supplier-latency`, async (request, reply) => {
      const { ms } = obj(request);
      if (typeof ms !== 'number' || !(ms >= 0)) return bad(reply, 'ms must be a number >= 0');
      this.setSupplierLatency(ms);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/supplier-failure`, async (request, reply) => {
      const { name, failure = null } = obj(request);
      if (typeof name !== 'string') return bad(reply, 'name must be a string');
      if (failure !== null && failure !== 'error' && failure !== 'timeout') {
        return bad(reply, "failure must be 'error', 'timeout' or null");
      }
      this.setSupplierFailure(name, failure);
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/suppliers`, async (request, reply) => {
      try {
        this.setSuppliers(obj(request).suppliers as Supplier[]);
      } catch (e) {
        return bad(reply, (e as Error).message);
      }
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/token-lifetimes`, async (request, reply) => {
      const { accessSeconds, refreshSeconds } = obj(request);
      for (const v of [accessSeconds, refreshSeconds]) {
        if (v !== undefined && (typeof v !== 'number' || !(v >= 0)))
          return bad(reply, 'lifetimes must be numbers >= 0');
      }
      this.setTokenLifetimes({
        accessSeconds: accessSeconds as number | undefined,
        refreshSeconds: refreshSeconds as number | undefined,
      });
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/expire-access-tokens`, () => {
      this.expireAllAccessTokens();
      return ok();
    });
    app.post(`${CONTROL_PREFIX}/revoke-refresh-tokens`, () => {
      this.revokeAllRefreshTokens();
      return ok();
    });
  }
}
