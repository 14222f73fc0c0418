import { useRead } from '../lib/query.ts';

/**
 * Package names by id, for showing "E2E tokens" where the API answers with `e2e-tokens`: the public
 * catalogue for customers, the admin catalogue (unpublished packages too) for admins. An id not
 * found (a package since removed) is shown as it is.
 */
export function usePackageNames(options: { admin?: boolean } = {}): (id: string | null) => string | null {
  const published = useRead(options.admin ? null : '/api/v1/catalog/packages');
  const all = useRead(options.admin ? '/api/v1/admin/catalog' : null);
  const list = (options.admin ? all.data?.packages : published.data) ?? [];
  const names = new Map(list.map((pack) => [pack.id, pack.name]));
  return (id) => (id === null ? null : (names.get(id) ?? id));
}
