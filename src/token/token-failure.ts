import { UpstreamError } from '../upstream/upstream-error.js';
import { TokenUnavailableError } from './token-unavailable.error.js';

/** The upstream's message for an API password never set (docs/upstream-api.md §4.1 rule 3). */
const PASSWORD_NOT_SET = 'Api password has not been set';

/**
 * Why a GetToken call failed, for operators: the upstream's answers of §7.1 that a person
 * must fix (credentials, password, account) apart from everything transient.
 */
export function toTokenFailure(error: unknown): TokenUnavailableError {
  if (error instanceof TokenUnavailableError) return error;
  if (error instanceof UpstreamError && error.kind === 'rejected') {
    const message = error.details.upstreamMessage;
    if (error.httpStatus === 403) return new TokenUnavailableError('account_disabled', message);
    if (error.httpStatus === 401) {
      return new TokenUnavailableError(
        message?.includes(PASSWORD_NOT_SET) ? 'password_not_set' : 'credentials_rejected',
        message,
      );
    }
  }
  return new TokenUnavailableError('upstream_failure', error instanceof Error ? error.message : undefined);
}
