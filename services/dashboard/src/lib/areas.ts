import type { Account } from './session.tsx';

/**
 * Who may open each area: the API refuses these routes to anyone else, and the guard keeps the
 * screen from asking (and failing) at all, saying why instead.
 */
const AREAS: [string, string, (account: Account) => boolean][] = [
  ['/admin', 'admins', (account) => account.isAdmin],
  ['/reseller', 'resellers', (account) => account.isReseller],
];

/** Whom `path` is for when `account` may not open it; null when it may. */
export function refusedArea(path: string, account: Account): string | null {
  for (const [prefix, who, allowed] of AREAS) {
    if ((path === prefix || path.startsWith(`${prefix}/`)) && !allowed(account)) return who;
  }
  return null;
}
