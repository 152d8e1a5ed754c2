// Calls to the gateway's administration routes (docs/api.md §4 and §7) with the signed-in
// operator's access token (sign-in.js), or else the break-glass key. The key lives in sessionStorage only (this tab, until it closes): never in a URL, a cookie or
// localStorage, and it is sent in X-Api-Key, a header the access log never writes.

import { accessToken, hasSession, renew } from '/console/sign-in.js';

const KEY_ITEM = 'vgw-console-api-key';

export const keyStore = {
  get: () => sessionStorage.getItem(KEY_ITEM),
  set: (key) => sessionStorage.setItem(KEY_ITEM, key),
  clear: () => sessionStorage.removeItem(KEY_ITEM),
};

/** A failed call, with a sentence an operator can act on (and a 400's field errors, to show inline). */
export class ApiError extends Error {
  constructor(status, message, code, errors = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }
}

/** What each refusal means to someone holding a key at this page. */
async function failure(response) {
  let problem = {};
  try {
    problem = await response.json();
  } catch {
    // not problem+json (a proxy's page): the status says enough
  }
  const detail = typeof problem.detail === 'string' ? ` (${problem.detail})` : '';
  switch (response.status) {
    case 401:
      return new ApiError(
        401,
        hasSession()
          ? 'The gateway did not accept your sign-in: sign in again.'
          : 'The gateway did not accept this key: check it and enter it again.',
        problem.code,
      );
    case 403:
      return new ApiError(403, `You may not do this${detail}. Ask for the scope named.`, problem.code);
    case 409:
      return new ApiError(409, problem.detail ?? 'The ledger changed meanwhile.', problem.code);
    case 404:
      return new ApiError(404, 'Not found.', problem.code);
    case 429:
      return new ApiError(429, `Too many requests${detail}; try again shortly.`, problem.code);
    default: {
      const errors = Array.isArray(problem.errors) ? problem.errors.slice(0, 20) : [];
      return new ApiError(response.status, `The gateway answered ${response.status}${detail}.`, problem.code, errors);
    }
  }
}

/** The credential for a call: the operator's token (renewed if it has just expired), else the key. */
async function credential() {
  if (hasSession()) {
    const token = accessToken() ?? ((await renew()) ? accessToken() : null);
    if (token) return { authorization: `Bearer ${token}` };
    throw new ApiError(401, 'Your sign-in has ended: sign in again.');
  }
  const key = keyStore.get();
  if (!key) throw new ApiError(0, 'Sign in (or enter an API key) first.');
  return { 'x-api-key': key };
}

async function send(path, init = {}) {
  const headers = await credential();
  let response;
  try {
    response = await fetch(path, {
      ...init,
      headers: { ...init.headers, ...headers },
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch {
    throw new ApiError(0, 'The gateway could not be reached.');
  }
  if (!response.ok) throw await failure(response);
  return response;
}

export async function getJson(path) {
  const response = await send(path, { headers: { accept: 'application/json' } });
  return response.json();
}

/**
 * A POST whose answer is JSON: with a JSON body (an operator's decision), or without one (the
 * retry of a webhook delivery: no content-type then, which an empty JSON body would fail).
 */
export async function postJson(path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const init = { method: 'POST', headers };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await send(path, init);
  return response.json();
}

/**
 * GET /admin/ledger as NDJSON, read line by line as it streams: `onEntry` sees each entry and may
 * return true to stop reading (the rest of the stream is cancelled), so memory stays bounded.
 */
export async function streamLedger(query, onEntry) {
  const response = await send(`/admin/ledger?${new URLSearchParams(query)}`, {
    headers: { accept: 'application/x-ndjson' },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffered += value;
    const lines = buffered.split('\n');
    buffered = done ? '' : lines.pop();
    for (const line of lines) {
      if (line.trim() === '') continue;
      if (onEntry(JSON.parse(line)) === true) {
        await reader.cancel();
        return;
      }
    }
    if (done) return;
  }
}

/**
 * A GET saved as a file: the answer read whole into a Blob (the key must ride a header, so a
 * plain link cannot fetch it), then handed to the browser's download through a blob: link.
 */
export async function download(path, accept, filename) {
  const response = await send(path, { headers: { accept } });
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * POST /admin/reconciliations: the provider's CSV as it is, streamed from the file; a dry run, or
 * the confirmation of one (`digest`: applied only if the ledger still gives that report, else 409).
 */
export async function reconcile(file, options = {}) {
  const query = new URLSearchParams(options.digest ? { digest: options.digest } : { dryRun: 'true' });
  const response = await send(`/admin/reconciliations?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'text/csv', accept: 'application/json' },
    body: file,
  });
  return response.json();
}
