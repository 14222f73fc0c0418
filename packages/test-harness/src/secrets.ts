import { randomBytes } from 'node:crypto';

/** Fresh service secrets for one test run: nothing shared with a real deployment. */
export function testSecrets() {
  return {
    INTERNAL_TOKEN_SECRET: randomBytes(32).toString('hex'),
    KEY_PEPPER: randomBytes(32).toString('hex'),
    KEY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
  };
}
