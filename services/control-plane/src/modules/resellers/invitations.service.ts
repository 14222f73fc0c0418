import { AppError } from '@tollgate/errors';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Dependencies } from '../../deps.ts';
import {
  type Account,
  createAccount,
  findAccountByEmail,
  findAccountById,
  normalizeEmail,
  setResellerLink,
} from '../accounts/accounts.service.ts';
import { revokeKeysIn } from '../api-keys/api-keys.service.ts';
import { type Actor, recordAudit } from '../audit/audit.service.ts';
import { hashEmailCode, newResetToken } from '../auth/email-codes.ts';
import { hashPassword } from '../auth/passwords.ts';
import { changeBillingEntries } from '../billing/engines.ts';
import { dashboardLink } from '../mail/links.ts';
import type { Mailer } from '../mail/mail.service.ts';
import { enforceThrottle, throttleKey } from '../throttle/throttle.service.ts';
import type { ResellerInvitationsTable } from './invitations.table.ts';

type InvitationRow = Selectable<ResellerInvitationsTable>;

/** An invitation as its reseller sees it: never the token, never whether the address is registered. */
export interface Invitation {
  id: string;
  email: string;
  displayName: string | null;
  status: 'pending' | 'accepted' | 'expired' | 'replaced';
  /** The customer's account id, once accepted. */
  customerId: string | null;
  expiresAt: Date;
  acceptedAt: Date | null;
  createdAt: Date;
}

const TOKEN_PATTERN = /^[0-9a-f]{64}$/;
const WRONG_TOKEN = 'The invitation is wrong, used or expired. Ask for a new one.';

function invitationTokenHash(pepper: string, token: string): Buffer {
  return hashEmailCode(pepper, 'reseller_invitation', '', token);
}

function toInvitation(row: InvitationRow, now: Date): Invitation {
  const status = row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    status,
    customerId: row.account_id,
    expiresAt: row.expires_at,
    acceptedAt: row.accepted_at,
    createdAt: row.created_at,
  };
}

/**
 * Invites an address to become the reseller's customer. Nothing is linked, created or revealed
 * here: the answer and the work are the same whether or not the address has an account (the
 * email differs, and only the mailbox owner reads it). The link is made when the mailbox owner
 * accepts with the emailed token; a newer invitation of the same reseller to the same address
 * replaces the older one.
 */
export async function inviteCustomer(
  deps: Dependencies,
  mailer: Mailer,
  actor: Actor,
  input: { email: string; displayName?: string | null },
): Promise<Invitation> {
  const { db, clock, config } = deps;
  const email = normalizeEmail(input.email);
  const now = clock.now();
  await enforceThrottle(
    db,
    throttleKey('reseller-invitation-recipient', email),
    config.throttles.emailPerRecipient,
    now,
  );
  const reseller = await findAccountById(db, actor.accountId);
  const registered = await findAccountByEmail(db, email);
  const token = newResetToken();
  const ttlMs = config.emailCodes.setupTtlMs;
  const row = await db.transaction().execute(async (trx) => {
    await trx
      .updateTable('reseller_invitations')
      .set({ status: 'replaced' })
      .where('reseller_id', '=', actor.accountId)
      .where((eb) => eb(eb.fn('lower', ['email']), '=', email))
      .where('status', '=', 'pending')
      .execute();
    const invitation = await trx
      .insertInto('reseller_invitations')
      .values({
        reseller_id: actor.accountId,
        email,
        display_name: input.displayName ?? null,
        token_hash: invitationTokenHash(config.keyPepper, token),
        expires_at: new Date(now.getTime() + ttlMs),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, actor, {
      action: 'reseller.customer.invite',
      targetType: 'reseller_invitation',
      targetId: invitation.id,
    });
    return invitation;
  });
  const inviter = reseller?.displayName ?? reseller?.email ?? 'Your provider';
  const link = dashboardLink(config, `/accept-invitation#token=${token}${registered ? '' : '&new=1'}`);
  const hours = Math.round(ttlMs / 3_600_000);
  const consequences =
    'If you accept, they can create and manage API keys that spend your account’s balance, grant ' +
    'you credit and read your usage. You can see and end this in your account at any time.';
  await mailer.send({
    to: email,
    kind: 'reseller_invitation',
    subject: `${inviter} invites you to Tollgate`,
    text: registered
      ? `${inviter} asks to manage your Tollgate account as your provider. ${consequences} ` +
        `To accept, open this link:\n\n${link}\n\nIt expires in ${hours} hours and works once. ` +
        'If you do not know them, ignore this email: nothing changes.'
      : `${inviter} invites you to Tollgate as your provider. ${consequences} ` +
        `To accept, open this link and choose your password:\n\n${link}\n\nIt expires in ${hours} ` +
        'hours and works once. If you do not know them, ignore this email: no account is created.',
  });
  return toInvitation(row, now);
}

export async function listInvitations(
  deps: Pick<Dependencies, 'db' | 'clock'>,
  resellerId: string,
): Promise<Invitation[]> {
  const rows = await deps.db
    .selectFrom('reseller_invitations')
    .selectAll()
    .where('reseller_id', '=', resellerId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(200)
    .execute();
  const now = deps.clock.now();
  return rows.map((row) => toInvitation(row, now));
}

/**
 * Accepts an invitation with its emailed token: the address's account becomes the reseller's
 * customer, or, when the address has none, an account is created with the password chosen here.
 */
export async function acceptInvitation(
  deps: Dependencies,
  input: { token: string; password?: string | undefined },
  client: { ip: string; userAgent: string | null },
): Promise<{ account: Account; created: boolean }> {
  const { db, clock, config } = deps;
  await enforceThrottle(
    db,
    throttleKey('code-check', client.ip),
    config.throttles.codeCheckPerAddress,
    clock.now(),
  );
  if (!TOKEN_PATTERN.test(input.token)) throw AppError.validation({ token: [WRONG_TOKEN] });
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  // Moving to another reseller ends the previous one's access as ending the link would: its keys
  // are revoked in the same transaction (changeBillingEntries: the hot tier refuses them at once).
  const outcome = await changeBillingEntries(deps, async (trx) => {
    const now = clock.now();
    const row = await trx
      .selectFrom('reseller_invitations')
      .selectAll()
      .where('token_hash', '=', invitationTokenHash(config.keyPepper, input.token))
      .where('status', '=', 'pending')
      .where('expires_at', '>', now)
      .forUpdate()
      .executeTakeFirst();
    if (!row) throw AppError.validation({ token: [WRONG_TOKEN] });
    const reseller = await findAccountById(trx, row.reseller_id);
    if (!reseller?.isReseller || reseller.status !== 'active') {
      throw AppError.validation({ token: ['This provider can no longer take customers.'] });
    }
    const existing = await findAccountByEmail(trx, row.email);
    let account: Account;
    if (existing) {
      if (existing.isAdmin || existing.id === reseller.id) {
        throw AppError.validation({ token: ['This account cannot be a provider’s customer.'] });
      }
      account = await setResellerLink({ db: trx, clock }, existing.id, reseller.id);
    } else {
      if (!passwordHash) throw AppError.validation({ password: ['Choose a password for your new account.'] });
      account = await createAccount(trx, {
        email: row.email,
        passwordHash,
        displayName: row.display_name,
        resellerId: reseller.id,
      });
    }
    await trx
      .updateTable('reseller_invitations')
      .set({ status: 'accepted', account_id: account.id, accepted_at: now })
      .where('id', '=', row.id)
      .execute();
    await recordAudit(
      trx,
      { accountId: account.id, ip: client.ip, userAgent: client.userAgent },
      {
        action: 'account.reseller.accept',
        targetType: 'reseller_invitation',
        targetId: row.id,
        detail: { resellerId: reseller.id, created: !existing },
      },
    );
    const previous = existing?.resellerId;
    const revoked =
      previous && previous !== reseller.id
        ? await revokeKeysIn(trx, account.id, await keysMadeBy(trx, previous, account.id), now)
        : [];
    return {
      result: { accepted: { account, created: !existing }, revoked },
      changed: revoked.length > 0 ? { accountId: account.id, keys: revoked } : null,
    };
  });
  await publishKeyChanges(deps, outcome.revoked);
  return outcome.accepted;
}

/**
 * The keys a reseller made for the account, by their audit rows (reseller.api_key.create, written
 * with each key): an account it no longer manages has them revoked, since the reseller holds
 * their secrets and they spend the account's balance.
 */
async function keysMadeBy(db: Kysely<Database>, resellerId: string, accountId: string): Promise<string[]> {
  const made = await db
    .selectFrom('audit_log')
    .select('target_id')
    .where('action', '=', 'reseller.api_key.create')
    .where('actor_account_id', '=', resellerId)
    .where(sql<boolean>`detail->>'customerId' = ${accountId}`)
    .execute();
  return made.flatMap(({ target_id: keyId }) => (keyId ? [keyId] : []));
}

async function publishKeyChanges(deps: Dependencies, keys: ReadonlyArray<{ id: string }>): Promise<void> {
  for (const key of keys) await deps.events.publish({ type: 'key.changed', keyId: key.id });
}

export interface ResellerOfAccount {
  id: string;
  email: string;
  displayName: string | null;
}

/** The reseller that manages the account, if any: what the customer sees in its account. */
export async function readOwnReseller(
  db: Kysely<Database>,
  account: Account,
): Promise<ResellerOfAccount | null> {
  if (!account.resellerId) return null;
  const reseller = await findAccountById(db, account.resellerId);
  return reseller ? { id: reseller.id, email: reseller.email, displayName: reseller.displayName } : null;
}

/**
 * Ends the link to the account's reseller, from the customer's side. The keys the reseller made
 * for the account are revoked with it: the reseller holds their secrets, and they spend this
 * account's balance. Credit already granted stays the customer's.
 */
export async function endOwnReseller(deps: Dependencies, actor: Actor): Promise<{ revokedKeys: number }> {
  const account = await findAccountById(deps.db, actor.accountId);
  const resellerId = account?.resellerId;
  if (!resellerId) return { revokedKeys: 0 };
  // The link, the keys' revocation and the audit row commit together, and the hot tier refuses
  // the revoked keys from the moment this answers (changeBillingEntries).
  const revoked = await changeBillingEntries(deps, async (trx) => {
    await setResellerLink({ db: trx, clock: deps.clock }, actor.accountId, null);
    const keys = await keysMadeBy(trx, resellerId, actor.accountId);
    const rows = await revokeKeysIn(trx, actor.accountId, keys, deps.clock.now());
    await recordAudit(trx, actor, {
      action: 'account.reseller.end',
      targetType: 'account',
      targetId: actor.accountId,
      detail: { resellerId, revokedKeys: rows.length },
    });
    return { result: rows, changed: rows.length > 0 ? { accountId: actor.accountId, keys: rows } : null };
  });
  await publishKeyChanges(deps, revoked);
  return { revokedKeys: revoked.length };
}
