import { api } from '../lib/api.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Button, Card, Empty, ErrorMessage, Loading, Page } from '../lib/ui.tsx';

interface Held {
  id: string;
  accountId: string;
  alias: string;
  surface: string;
  reason: string | null;
  heldAt: string | null;
}

interface AuditEvent {
  id: string;
  action: string;
  actor: { accountId: string | null; managementKeyId: string | null };
  target: { type: string | null; id: string | null };
  ip: string | null;
  createdAt: string;
}

interface AdminCatalog {
  providers: { id: string; kind: string }[];
  aliases: {
    alias: string;
    providerId: string;
    published: boolean;
    price: { input: string; output: string } | null;
  }[];
  packages: { id: string; name: string; tokens: string; published: boolean }[];
}

/** Held reservations, the audit log and the catalogue, for operators. */
export function AdminOperationsScreen() {
  const held = useApi<Held[]>('/admin/reservations/held');
  const audit = useApi<{ items: AuditEvent[] }>('/admin/audit?limit=50');
  const catalog = useApi<AdminCatalog>('/admin/catalog');
  const release = useAction(async (id: string) => {
    await api('POST', `/admin/reservations/${id}/resolve`, { action: 'release' });
    await held.reload();
  });
  return (
    <Page title="Operations">
      <Card title="Held reservations">
        <ErrorMessage error={held.error ?? release.error} />
        {held.loading && !held.data ? <Loading /> : null}
        {held.data && held.data.length === 0 ? (
          <p className="muted">Nothing is held: every call was settled or released.</p>
        ) : null}
        <ul className="sessions">
          {held.data?.map((item) => (
            <li key={item.id}>
              <span>
                <code>{item.alias}</code> · {item.surface} · {item.reason ?? 'usage unknown'} ·{' '}
                {formatDate(item.heldAt)}
              </span>
              <Button onClick={() => void release.execute(item.id)} label={`Release reservation ${item.id}`}>
                Release
              </Button>
            </li>
          ))}
        </ul>
      </Card>
      <Card title="Audit log">
        <ErrorMessage error={audit.error} />
        {audit.data && audit.data.items.length === 0 ? (
          <Empty title="No audited actions yet">
            Admin, reseller and management-key actions appear here.
          </Empty>
        ) : null}
        {audit.data && audit.data.items.length > 0 ? (
          <div className="table-wrap">
            <table data-testid="audit">
              <caption className="sr-only">Audit log, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Action</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Target</th>
                  <th scope="col">From</th>
                </tr>
              </thead>
              <tbody>
                {audit.data.items.map((event) => (
                  <tr key={event.id}>
                    <td>{formatDate(event.createdAt)}</td>
                    <td>
                      <code>{event.action}</code>
                    </td>
                    <td>
                      {event.actor.managementKeyId
                        ? `key ${event.actor.managementKeyId.slice(0, 8)}`
                        : (event.actor.accountId?.slice(0, 8) ?? '–')}
                    </td>
                    <td>
                      {event.target.type ? `${event.target.type} ${event.target.id?.slice(0, 8) ?? ''}` : '–'}
                    </td>
                    <td>{event.ip ?? '–'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </Card>
      <Card title="Catalogue">
        <ErrorMessage error={catalog.error} />
        {catalog.data ? (
          <ul>
            {catalog.data.aliases.map((alias) => (
              <li key={alias.alias}>
                <code>{alias.alias}</code> → {alias.providerId}
                {alias.published ? '' : ' (unpublished)'}
                {alias.price
                  ? ` · ${alias.price.input}/${alias.price.output} credits per token`
                  : ' · packages only'}
              </li>
            ))}
            {catalog.data.packages.map((pack) => (
              <li key={pack.id}>
                package <code>{pack.id}</code>: {pack.name}, {groupDigits(pack.tokens)} tokens
                {pack.published ? '' : ' (unpublished)'}
              </li>
            ))}
          </ul>
        ) : null}
      </Card>
    </Page>
  );
}
