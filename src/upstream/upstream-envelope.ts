import type { UpstreamFieldError } from './upstream-error.js';

/** The response envelope of upstream-api-v5.md §2.2. */
export interface UpstreamMeta {
  trackId?: string;
  status?: string;
  isSuccess: boolean;
  code: number;
  message?: string;
  errorMessage?: string | null;
  errorType?: string | null;
  errors?: unknown[];
}

export interface UpstreamEnvelope<T = unknown> {
  meta: UpstreamMeta;
  data: T;
}

/** Token data of §2.3 (`expiresTn` is spelled so by the locked v5 contract, §9.2). */
export interface UpstreamTokenData {
  accessToken: string;
  tokenType: string;
  expiresTn: number;
  refreshToken: string;
}

export function parseEnvelope(text: string): UpstreamEnvelope | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const meta = (parsed as { meta?: unknown }).meta as Partial<UpstreamMeta> | undefined;
  if (typeof meta !== 'object' || meta === null) return null;
  if (typeof meta.isSuccess !== 'boolean' || typeof meta.code !== 'number') return null;
  return parsed as UpstreamEnvelope;
}

export function isTokenData(data: unknown): data is UpstreamTokenData {
  const d = data as Partial<UpstreamTokenData> | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.accessToken === 'string' &&
    d.accessToken.length > 0 &&
    typeof d.refreshToken === 'string' &&
    d.refreshToken.length > 0 &&
    typeof d.expiresTn === 'number' &&
    d.expiresTn > 0
  );
}

/** `meta.errors` elements are "not shown" (§2.2); accept `{field|name|key, message}` shapes. */
export function fieldErrors(errors: unknown[] | undefined): UpstreamFieldError[] {
  if (!Array.isArray(errors)) return [];
  return errors.flatMap((e) => {
    if (typeof e !== 'object' || e === null) return [];
    const o = e as Record<string, unknown>;
    const field = o.field ?? o.name ?? o.key ?? o.propertyName;
    const message = o.message ?? o.errorMessage;
    return typeof field === 'string' ? [{ field, message: typeof message === 'string' ? message : 'invalid' }] : [];
  });
}
