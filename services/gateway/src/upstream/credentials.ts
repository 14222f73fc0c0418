import { readFileSync } from 'node:fs';
import { providerCredentialProblem } from '@tollgate/schemas';

/** Provider credentials by name (a provider's `credentialRef`). */
export interface CredentialStore {
  /** The secret named `ref`; null for a null ref or a name that is not configured. */
  get(ref: string | null): string | null;
}

/**
 * The gateway's own secrets and connection strings. A catalogue entry naming one of these would
 * send it to a provider, so they are never handed out as provider credentials.
 */
const RESERVED_NAMES = new Set([
  'INTERNAL_TOKEN_SECRET',
  'KEY_PEPPER',
  'KEY_ENCRYPTION_KEY',
  'DATABASE_URL',
  'REDIS_URL',
  'CONTROL_PLANE_INTERNAL_URL',
  'SECRETS_FILE',
]);

/** Thrown at start when SECRETS_FILE cannot be used. The message never quotes the file's content. */
export class CredentialsFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsFileError';
  }
}

function readSecretsFile(path: string): Map<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new CredentialsFileError(`SECRETS_FILE ${path} cannot be read (${code})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CredentialsFileError(`SECRETS_FILE ${path} is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CredentialsFileError(`SECRETS_FILE ${path} must hold a JSON object {name: secret}`);
  }
  const secrets = new Map<string, string>();
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value !== 'string' || value.length === 0) {
      throw new CredentialsFileError(`SECRETS_FILE ${path}: the value of ${name} must be a non-empty string`);
    }
    secrets.set(name, value);
  }
  return secrets;
}

/**
 * Loads provider credentials once at start. Only names in the provider namespace (starting with
 * `prefix`, PROVIDER_SECRET_PREFIX) are ever looked up: in SECRETS_FILE (a JSON object
 * `{name: secret}`) when one is given, then in the environment. Any other name, and the gateway's
 * own secrets, give null whatever the catalogue says.
 */
export function loadCredentials(options: {
  env: Record<string, string | undefined>;
  prefix: string;
  secretsFile?: string | undefined;
}): CredentialStore {
  const fromFile = options.secretsFile ? readSecretsFile(options.secretsFile) : new Map<string, string>();
  const { env, prefix } = options;
  return {
    get(ref) {
      if (ref === null || RESERVED_NAMES.has(ref) || providerCredentialProblem(ref, prefix)) return null;
      return fromFile.get(ref) ?? (env[ref] || null);
    },
  };
}
