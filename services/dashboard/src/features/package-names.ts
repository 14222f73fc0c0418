import { useApi } from '../lib/query.ts';

/**
 * Package names by id, for showing "E2E tokens" where the API answers with `e2e-tokens`: the public
 * catalogue for customers, the admin catalogue (unpublished packages too) for admins. An id not
 * found (a package since removed) is shown as it is.
 */
export function usePackageNames(options: { admin?: boolean } = {}): (id: string | null) => string | null {
  const source = useApi<{ id: string; name: string }[] | { packages: { id: string; name: string }[] }>(
    options.admin ? '/admin/catalog' : '/catalog/packages',
  );
  const list = Array.isArray(source.data) ? source.data : (source.data?.packages ?? []);
  const names = new Map(list.map((pack) => [pack.id, pack.name]));
  return (id) => (id === null ? null : (names.get(id) ?? id));
}
