import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { AppError } from '@tollgate/errors';
import { Quantity, SignedQuantity } from '@tollgate/schemas';
import { migrateToLatest } from '../db/migrate.ts';
import type { Dependencies } from '../deps.ts';
import {
  type Account,
  createAccount,
  findAccountByEmail,
  setAccountRoles,
} from '../modules/accounts/accounts.service.ts';
import { createKey } from '../modules/api-keys/api-keys.service.ts';
import { setAccountKeyLimits } from '../modules/api-keys/key-limits.service.ts';
import { hashPassword } from '../modules/auth/passwords.ts';
import { resetTwoFactor } from '../modules/auth/two-factor.service.ts';
import { changeCredit, grantPackage } from '../modules/billing/billing.service.ts';
import { listHeld } from '../modules/billing/holds.service.ts';
import { verifyLedger } from '../modules/billing/ledger-check.ts';
import { reconcileOnce } from '../modules/billing/reconciler.ts';
import { syncCatalog } from '../modules/catalog/catalog.service.ts';
import { loadCatalogFile } from '../modules/catalog/catalog-file.ts';
import { reconcilePaymentsOnce } from '../modules/payments/payment-reconciler.ts';
import { type ParsedArguments, UsageError } from './arguments.ts';

export type CommandInput = ParsedArguments;

type Command = (deps: Dependencies, input: CommandInput) => Promise<unknown>;

function arg(input: CommandInput, index: number, name: string): string {
  const value = input.positionals[index];
  if (!value) throw new UsageError(`missing <${name}>`);
  return value;
}

function text(input: CommandInput, name: string): string | undefined {
  const value = input.options[name];
  return typeof value === 'string' ? value : undefined;
}

async function accountByEmail(deps: Dependencies, email: string): Promise<Account> {
  const account = await findAccountByEmail(deps.db, email);
  if (!account) throw new UsageError(`no account with email ${email}`);
  return account;
}

/** Every command of `tollgate-admin`; each returns what is printed as JSON. */
export const COMMANDS: Record<string, { usage: string; run: Command }> = {
  migrate: {
    usage: 'migrate',
    run: async (deps) => ({ applied: await migrateToLatest(deps.db) }),
  },
  'sync-catalog': {
    usage: 'sync-catalog [file]          (default: CATALOG_FILE)',
    run: async (deps, input) => {
      const file = input.positionals[0] ?? deps.config.catalogFile;
      if (!file) throw new UsageError('name a catalogue file or set CATALOG_FILE');
      await syncCatalog(deps, await loadCatalogFile(file, deps.config.env, deps.config.providerSecretPrefix));
      return { synced: file };
    },
  },
  'create-account': {
    usage: 'create-account <email> [--password <password>]   (a random one is printed when omitted)',
    run: async (deps, input) => {
      const email = arg(input, 0, 'email');
      const password = text(input, 'password') ?? randomBytes(12).toString('base64url');
      const account = await createAccount(deps.db, {
        email,
        passwordHash: await hashPassword(password),
        displayName: null,
      });
      return {
        accountId: account.id,
        email: account.email,
        ...(text(input, 'password') ? {} : { password }),
      };
    },
  },
  'create-key': {
    usage:
      'create-key <email> [--name <name>] [--scope a,b] [--requests-per-minute N] [--concurrency N] [--max-output-tokens N] [--max-request-bytes N]   (prints the secret once)',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const scope = text(input, 'scope')?.split(',').filter(Boolean) ?? null;
      const limit = (name: string) => {
        const value = text(input, name);
        if (value === undefined) return undefined;
        if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`--${name} must be a positive integer`);
        return Number(value);
      };
      const { key, secret } = await createKey(deps, account.id, {
        name: text(input, 'name') ?? 'cli',
        scope,
        limits: {
          requestsPerMinute: limit('requests-per-minute'),
          concurrency: limit('concurrency'),
          maxOutputTokens: limit('max-output-tokens'),
          maxRequestBytes: limit('max-request-bytes'),
        },
      });
      return { keyId: key.id, secret, limits: key.limits };
    },
  },
  'grant-package': {
    usage: 'grant-package <email> <package-id> [--idempotency-key <key>] [--note <text>]',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const packageId = arg(input, 1, 'package-id');
      const key = text(input, 'idempotency-key');
      return grantPackage(deps, {
        accountId: account.id,
        packageId,
        cause: `cli: ${text(input, 'note') ?? `grant of ${packageId}`}`,
        ...(key ? { idempotencyKey: key } : {}),
      });
    },
  },
  'reset-two-factor': {
    usage: 'reset-two-factor <email> --note <why>   (turns two-factor sign-in off; the note is audited)',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const reason = text(input, 'note');
      if (!reason) throw new UsageError('reset-two-factor needs --note (why; it is kept in the audit log)');
      return { email: account.email, ...(await resetTwoFactor(deps, account.id, reason)) };
    },
  },
  'grant-credit': {
    usage: 'grant-credit <email> <amount> [--note <text>]      (integer credit units)',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const parsed = Quantity.safeParse(arg(input, 1, 'amount'));
      if (!parsed.success) throw new UsageError('the amount must be a non-negative integer, e.g. 1000');
      const amount = parsed.data;
      await changeCredit(deps, {
        accountId: account.id,
        amount,
        kind: 'grant',
        cause: `cli: ${text(input, 'note') ?? 'credit grant'}`,
      });
      return { accountId: account.id, granted: String(amount) };
    },
  },
  'adjust-credit': {
    usage: 'adjust-credit <email> <signed-amount> --note <reason>',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const parsed = SignedQuantity.safeParse(arg(input, 1, 'signed-amount'));
      if (!parsed.success) throw new UsageError('the amount must be an integer, e.g. -500 or 1000');
      const note = text(input, 'note');
      if (!note) throw new UsageError('an adjustment needs --note <reason>');
      await changeCredit(deps, {
        accountId: account.id,
        amount: parsed.data,
        kind: 'adjustment',
        cause: `cli: ${note}`,
      });
      return { accountId: account.id, adjusted: String(parsed.data) };
    },
  },
  'set-key-limits': {
    usage:
      'set-key-limits <email> [--requests-per-minute N|default] [--concurrency N|default] [--max-output-tokens N|default] [--max-request-bytes N|default]   (maxima of the key ceilings customers may choose)',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const maximum = (name: string) => {
        const value = text(input, name);
        if (value === undefined) return undefined;
        if (value === 'default') return null;
        if (!/^[1-9][0-9]{0,9}$/.test(value) || Number(value) > 2_147_483_647) {
          throw new UsageError(`--${name} must be a positive integer (at most 2147483647) or default`);
        }
        return Number(value);
      };
      const { maxima, loweredKeyIds } = await setAccountKeyLimits(deps, account.id, {
        requestsPerMinute: maximum('requests-per-minute'),
        concurrency: maximum('concurrency'),
        maxOutputTokens: maximum('max-output-tokens'),
        maxRequestBytes: maximum('max-request-bytes'),
      });
      return { accountId: account.id, ...maxima, loweredKeyIds };
    },
  },
  'set-role': {
    usage: 'set-role <email> admin|reseller [--off]',
    run: async (deps, input) => {
      const account = await accountByEmail(deps, arg(input, 0, 'email'));
      const role = arg(input, 1, 'role');
      if (role !== 'admin' && role !== 'reseller') throw new UsageError('role must be admin or reseller');
      const updated = await setAccountRoles(deps.db, account.id, { [role]: input.options.off !== true });
      return { accountId: updated.id, admin: updated.isAdmin, reseller: updated.isReseller };
    },
  },
  'verify-ledger': {
    usage: 'verify-ledger [email]     (balances against the sums of their ledger rows)',
    run: async (deps, input) => {
      const email = input.positionals[0];
      const problems = await verifyLedger(
        deps.db,
        email ? (await accountByEmail(deps, email)).id : undefined,
      );
      return { consistent: problems.length === 0, problems };
    },
  },
  reconcile: {
    usage: 'reconcile                 (release timed-out reservations and expired holds now)',
    run: (deps) => reconcileOnce(deps),
  },
  'reconcile-payments': {
    usage: 'reconcile-payments        (ask providers about pending payments, expire overdue orders now)',
    run: (deps) => reconcilePaymentsOnce(deps),
  },
  held: {
    usage: 'held                      (reservations held for reconciliation)',
    run: (deps) => listHeld(deps, 500),
  },
};

/** Which database the CLI works on, for the operator: mode and place, never a credential. */
export function describeDatabase(config: { databaseUrl: string | undefined; dataDir: string }): string {
  if (!config.databaseUrl) return `embedded (PGlite in ${path.resolve(config.dataDir)})`;
  const url = new URL(config.databaseUrl);
  return `postgres (${url.host || 'local socket'}${url.pathname || ''})`;
}

/** AppErrors raised by domain code read as usage problems at the command line. */
export function describeFailure(error: unknown): string {
  if (error instanceof UsageError) return error.message;
  if (error instanceof AppError) {
    const fields = error.fieldErrors ? ` ${JSON.stringify(error.fieldErrors)}` : '';
    return `${error.code}: ${error.message}${fields}`;
  }
  return error instanceof Error ? error.message : String(error);
}
