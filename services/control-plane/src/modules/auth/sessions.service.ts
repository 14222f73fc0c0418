import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '@tollgate/errors';
import type { Dependencies } from '../../deps.ts';
import { type Account, findAccountById, isUuid } from '../accounts/accounts.service.ts';
import {
  endSessions,
  insertSession,
  type SessionRow,
  selectOpenSessions,
  selectSessionByTokenHash,
  touchSession,
} from './auth.repository.ts';

export interface SessionInfo {
  id: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  userAgent: string | null;
  ip: string | null;
}

export interface StartedSession {
  /** Goes into the HttpOnly cookie; only its hash is stored. */
  token: string;
  /** Returned to the page (body and readable cookie); sent back as X-CSRF-Token. */
  csrfToken: string;
  session: SessionInfo;
}

/** Who is calling, once the session cookie checked out. */
export interface Authenticated {
  session: SessionInfo;
  account: Account;
  csrfTokenHash: Buffer;
}

export type SessionDeps = Pick<Dependencies, 'db' | 'clock' | 'config'>;

/** Hex, so a token can never look like an `sk-` inference key in a header. 256 bits. */
const TOKEN_PATTERN = /^[0-9a-f]{64}$/;
/** last_seen_at is written at most this often per session, not on every request. */
const TOUCH_EVERY_MS = 15_000;

function newToken(): string {
  return randomBytes(32).toString('hex');
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function toSessionInfo(row: SessionRow): SessionInfo {
  return {
    id: row.id,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
    userAgent: row.user_agent,
    ip: row.ip,
  };
}

export async function startSession(
  deps: SessionDeps,
  accountId: string,
  meta: { userAgent: string | null; ip: string | null },
): Promise<StartedSession> {
  const token = newToken();
  const csrfToken = newToken();
  const now = deps.clock.now();
  const row = await insertSession(deps.db, {
    accountId,
    tokenHash: hashToken(token),
    csrfTokenHash: hashToken(csrfToken),
    now,
    expiresAt: new Date(now.getTime() + deps.config.sessions.absoluteTimeoutMs),
    userAgent: meta.userAgent?.slice(0, 512) ?? null,
    ip: meta.ip,
  });
  return { token, csrfToken, session: toSessionInfo(row) };
}

/**
 * Resolves a session cookie: unauthenticated when absent or unknown, session_expired when ended
 * or past a timeout (the timed-out session is ended on the spot), account_suspended when the
 * account is suspended.
 */
export async function authenticateSession(
  deps: SessionDeps,
  token: string | undefined,
): Promise<Authenticated> {
  if (!token || !TOKEN_PATTERN.test(token)) throw new AppError('unauthenticated');
  const row = await selectSessionByTokenHash(deps.db, hashToken(token));
  if (!row) throw new AppError('unauthenticated');
  if (row.ended_at) throw new AppError('session_expired');
  const now = deps.clock.now();
  const timeout =
    now >= row.expires_at
      ? 'absolute_timeout'
      : now.getTime() - row.last_seen_at.getTime() >= deps.config.sessions.idleTimeoutMs
        ? 'idle_timeout'
        : null;
  if (timeout) {
    await endSessions(deps.db, { accountId: row.account_id, sessionId: row.id }, timeout, now);
    throw new AppError('session_expired');
  }
  const account = await findAccountById(deps.db, row.account_id);
  if (!account) throw new AppError('unauthenticated');
  if (account.status === 'suspended') throw new AppError('account_suspended');
  if (now.getTime() - row.last_seen_at.getTime() >= TOUCH_EVERY_MS) {
    await touchSession(deps.db, row.id, now);
    row.last_seen_at = now;
  }
  return { session: toSessionInfo(row), account, csrfTokenHash: row.csrf_token_hash };
}

export function csrfTokenMatches(auth: Authenticated, presented: string | undefined): boolean {
  if (!presented || !TOKEN_PATTERN.test(presented)) return false;
  return timingSafeEqual(hashToken(presented), auth.csrfTokenHash);
}

export async function listOpenSessions(deps: SessionDeps, accountId: string): Promise<SessionInfo[]> {
  const now = deps.clock.now();
  const idleCutoff = new Date(now.getTime() - deps.config.sessions.idleTimeoutMs);
  const rows = await selectOpenSessions(deps.db, accountId, now, idleCutoff);
  return rows.map(toSessionInfo);
}

/** Ends one of the caller's own open sessions; anything else is not_found. */
export async function endOwnSession(deps: SessionDeps, accountId: string, sessionId: string): Promise<void> {
  if (!isUuid(sessionId)) throw new AppError('not_found');
  const open = await listOpenSessions(deps, accountId);
  if (!open.some((session) => session.id === sessionId)) throw new AppError('not_found');
  await endSessions(deps.db, { accountId, sessionId }, 'ended_by_user', deps.clock.now());
}

export async function endCurrentSession(deps: SessionDeps, auth: Authenticated): Promise<void> {
  await endSessions(
    deps.db,
    { accountId: auth.account.id, sessionId: auth.session.id },
    'logout',
    deps.clock.now(),
  );
}

/** Every session of the account but `keepSessionId` (or all of them). */
export async function endAccountSessions(
  deps: SessionDeps,
  accountId: string,
  reason: string,
  keepSessionId?: string,
): Promise<number> {
  const ended = await endSessions(
    deps.db,
    { accountId, exceptSessionId: keepSessionId },
    reason,
    deps.clock.now(),
  );
  return ended.length;
}
