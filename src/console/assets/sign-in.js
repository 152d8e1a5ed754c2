// Signing in with the company's OpenID provider (docs/operations.md, "Signing in"): authorization
// code with PKCE (RFC 7636, S256), a public client, so no secret is in this page. The tokens live
// in sessionStorage (this tab, until it closes), never in a URL, a cookie or localStorage; the
// code arrives in this page's URL and is removed from it (and from history) at once.

const SESSION = 'vgw-console-oidc';
const PENDING = 'vgw-console-oidc-pending';
/** A renewal is due this long before expiry (at most; short-lived tokens renew at 3/4 of their life). */
const RENEW_BEFORE_S = 60;
const MAX_TIMER_MS = 86_400_000;

/** GET /console/sign-in: { configured, available, issuer, clientId, scope, …Endpoint }. */
let settings = { configured: false };
let renewal = null;

const redirectUri = () => `${location.origin}/console`;
const read = (name) => {
  try {
    return JSON.parse(sessionStorage.getItem(name) ?? 'null');
  } catch {
    return null;
  }
};

export async function loadSignIn() {
  try {
    const response = await fetch('/console/sign-in', { cache: 'no-store', credentials: 'omit', redirect: 'error' });
    if (response.ok) settings = await response.json();
  } catch {
    // the gateway unreachable: the key prompt says so on first use
  }
  return settings;
}

/** The signed-in operator's access token while it is valid, else null. */
export function accessToken() {
  const session = read(SESSION);
  return session && session.expiresAt > Date.now() ? session.accessToken : null;
}

export const operatorName = () => read(SESSION)?.name ?? null;
export const hasSession = () => read(SESSION) !== null;

const base64url = (bytes) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

/** To the provider's sign-in page; it comes back to /console?code=…&state=…. */
export async function beginSignIn() {
  const pending = { state: randomText(), verifier: randomText(), nonce: randomText() };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier))),
  );
  const url = new URL(settings.authorizationEndpoint);
  const query = {
    response_type: 'code',
    client_id: settings.clientId,
    redirect_uri: redirectUri(),
    scope: settings.scope,
    state: pending.state,
    nonce: pending.nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  location.assign(url.href);
}

/** The ID token's claims, for the name shown only: the gateway trusts the access token alone. */
function claimsOf(idToken) {
  try {
    const part = idToken.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0))));
  } catch {
    return {};
  }
}

async function tokenRequest(form) {
  const response = await fetch(settings.tokenEndpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ ...form, client_id: settings.clientId }),
    credentials: 'omit',
    cache: 'no-store',
    redirect: 'error',
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || typeof answer.access_token !== 'string') throw new Error(answer.error ?? 'token request failed');
  return answer;
}

function keep(answer, previous, nonce) {
  const idToken = answer.id_token ?? previous?.idToken;
  const claims = claimsOf(idToken ?? '');
  if (nonce !== undefined && claims.nonce !== nonce) throw new Error('the ID token is not for this sign-in');
  const name = claims.name ?? claims.preferred_username ?? claims.email ?? claims.sub ?? previous?.name ?? null;
  const session = {
    accessToken: answer.access_token,
    refreshToken: answer.refresh_token ?? previous?.refreshToken ?? null,
    idToken: idToken ?? null,
    expiresAt: Date.now() + Math.min(Math.max(Number(answer.expires_in) || 300, 5), 86_400) * 1000,
    lifetimeMs: Math.min(Math.max(Number(answer.expires_in) || 300, 5), 86_400) * 1000,
    name: typeof name === 'string' ? name : null,
  };
  sessionStorage.setItem(SESSION, JSON.stringify(session));
}

/**
 * Back from the provider: exchanges the code (with the PKCE verifier) when `state` is the one this
 * tab sent; returns an error sentence, or null when signed in (or when this was no callback).
 */
export async function finishSignIn() {
  const query = new URLSearchParams(location.search);
  if (!query.has('state')) return null;
  history.replaceState(null, '', '/console');
  const pending = read(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!pending || query.get('state') !== pending.state)
    return 'The sign-in answer was not for this tab: sign in again.';
  if (query.has('error') || !query.get('code')) return 'The identity provider did not sign you in.';
  try {
    keep(
      await tokenRequest({
        grant_type: 'authorization_code',
        code: query.get('code'),
        redirect_uri: redirectUri(),
        code_verifier: pending.verifier,
      }),
      null,
      pending.nonce,
    );
    return null;
  } catch {
    return 'Signing in failed at the identity provider: try again.';
  }
}

/** Quietly renews with the refresh token; false when there is none or it is refused. */
export async function renew() {
  const session = read(SESSION);
  if (!session?.refreshToken || !settings.tokenEndpoint) return false;
  try {
    keep(await tokenRequest({ grant_type: 'refresh_token', refresh_token: session.refreshToken }), session);
    return true;
  } catch {
    return false;
  }
}

/** A renewal before the token expires, and again after each; `onEnded` when one fails. */
export function keepRenewing(onEnded) {
  clearTimeout(renewal);
  const session = read(SESSION);
  if (!session) return;
  const early = Math.min(RENEW_BEFORE_S * 1000, session.lifetimeMs / 4);
  const delay = Math.min(Math.max(session.expiresAt - Date.now() - early, 1000), MAX_TIMER_MS);
  renewal = setTimeout(async () => {
    if (await renew()) keepRenewing(onEnded);
    else onEnded();
  }, delay);
}

/** Forgets the tokens here, then ends the provider's session where it offers that. */
export function signOutOfProvider() {
  clearTimeout(renewal);
  const session = read(SESSION);
  sessionStorage.removeItem(SESSION);
  if (!settings.endSessionEndpoint) return false;
  const url = new URL(settings.endSessionEndpoint);
  url.searchParams.set('client_id', settings.clientId);
  url.searchParams.set('post_logout_redirect_uri', redirectUri());
  if (session?.idToken) url.searchParams.set('id_token_hint', session.idToken);
  location.assign(url.href);
  return true;
}

export function forgetSession() {
  clearTimeout(renewal);
  sessionStorage.removeItem(SESSION);
}
