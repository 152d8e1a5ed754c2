import { describe, expect, it } from '@jest/globals';
import { sha256 } from '../crypto/sha256.js';
import { callerScope, callerScopes } from './caller.js';

describe('callerScope', () => {
  it('no longer lets an azp that contains the separator meet another (client, user) pair', () => {
    const userHash = sha256('alice').slice(0, 32);
    // Before: `${clientId}:u:${hash}`, so client "jwt:app:u:<hash of alice>" acting for nobody
    // had the same scope as client "jwt:app" acting for alice.
    const formerlyColliding = [{ clientId: `jwt:app:u:${userHash}` }, { clientId: 'jwt:app', subject: 'alice' }];
    expect(callerScope(formerlyColliding[0])).not.toBe(callerScope(formerlyColliding[1]));
  });

  it('tells apart pairs whose concatenations are equal', () => {
    const pairs = [
      { clientId: 'a:u:b' },
      { clientId: 'a', subject: 'b' },
      { clientId: 'a:u', subject: 'b' },
      { clientId: 'a\u0000b', subject: 'c' },
      { clientId: 'a', subject: 'b\u0000c' },
      { clientId: '1:a' },
      { clientId: 'a', subject: '' },
      { clientId: '' },
      { clientId: '', subject: 'a' },
    ];
    const scopes = new Set(pairs.map((pair) => callerScope(pair)));
    expect(scopes.size).toBe(pairs.length);
  });

  it('is stable for the same pair', () => {
    expect(callerScope({ clientId: 'jwt:app', subject: 'alice' })).toBe(
      callerScope({ clientId: 'jwt:app', subject: 'alice' }),
    );
  });
});

describe('callerScopes', () => {
  it("names a user's scope by each hash given, first first, each once; a client alone has one", () => {
    const user = { clientId: 'jwt:app', subject: 'alice' };
    expect(callerScopes(user, ['a'.repeat(64), 'b'.repeat(64), 'a'.repeat(64)])).toEqual([
      `7:jwt:app:u:${'a'.repeat(32)}`,
      `7:jwt:app:u:${'b'.repeat(32)}`,
    ]);
    expect(callerScopes({ clientId: 'svc-a' }, ['a'.repeat(64)])).toEqual(['5:svc-a']);
  });
});
