import { hash, verify } from '@node-rs/argon2';

/**
 * argon2id at the OWASP minimum (19 MiB memory, 2 passes, 1 lane). `algorithm: 2` is Argon2id:
 * the package's enum is a const enum, which type stripping cannot inline.
 */
const ARGON2ID = 2;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const PASSWORD_MIN_LENGTH = 8;
/** Long passphrases are welcome; the bound only stops absurd bodies. Never truncated. */
export const PASSWORD_MAX_LENGTH = 1024;

/**
 * A hash of a random password nobody knows, with the same parameters: verifying against it when
 * an email is unknown makes that answer take as long as a wrong password.
 */
const DUMMY_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$UNhNwyVukQjA7LWMCOXTjw$5NpkhC8nKaAcn0VxMyVUnT0iXKDpnru/rVGGvj2X0Bo';

export async function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS as never);
}

/** Verifies against the stored hash, or against the dummy hash when there is none. */
export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  try {
    const matches = await verify(storedHash ?? DUMMY_HASH, password);
    return storedHash !== null && matches;
  } catch {
    return false;
  }
}
