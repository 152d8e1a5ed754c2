// How the operator gets in (docs/operations.md, "Signing in"): the company's identity provider
// when CONSOLE_OIDC_ISSUER is set and it answers; else, and always as break-glass, an API key.
import { keyStore } from '/console/api.js';
import {
  beginSignIn,
  finishSignIn,
  forgetSession,
  hasSession,
  keepRenewing,
  loadSignIn,
  operatorName,
  signOutOfProvider,
} from '/console/sign-in.js';

const $ = (id) => document.getElementById(id);

function explain(settings) {
  const breakGlass = $('break-glass');
  const note = $('sign-in-note');
  if (!settings.configured) {
    breakGlass.open = true;
    $('break-glass-summary').textContent = 'Admin API key';
    note.textContent = 'No identity provider is configured for this console: use an admin API key.';
  } else if (!settings.available) {
    breakGlass.open = true;
    note.textContent =
      'The identity provider cannot be reached: sign-in is unavailable. Break-glass: use an admin API key.';
    note.className = 'note error';
  } else {
    $('sign-in').hidden = false;
    $('break-glass-summary').textContent = 'Break-glass: an admin API key, only when sign-in does not work';
    note.textContent = '';
  }
}

/** Who is signed in, beside the sign-out button. */
export function showWho() {
  const signedIn = hasSession();
  $('who').hidden = !signedIn;
  $('who-name').textContent = operatorName() ?? '';
  $('sign-in').hidden = signedIn || $('sign-in').dataset.available !== 'true';
}

/** `start` once a credential is at hand; `signOut(message, isError)` when a session ends. */
export async function setUpAccess(start, signOut, setKeyMessage) {
  const settings = await loadSignIn();
  $('sign-in').dataset.available = String(Boolean(settings.available));
  explain(settings);
  $('sign-in').addEventListener('click', () => void beginSignIn());
  $('sign-out').addEventListener('click', () => {
    keyStore.clear();
    if (!signOutOfProvider()) signOut('Signed out.');
  });
  const problem = settings.available ? await finishSignIn() : null;
  if (problem) setKeyMessage(problem, true);
  showWho();
  if (hasSession()) {
    keepRenewing(() => {
      forgetSession();
      showWho();
      signOut('Your sign-in has ended and could not be renewed: sign in again.', true);
    });
    return start();
  }
  if (keyStore.get()) return start();
}
