import { useState } from 'react';
import { ApiError, api } from '../lib/api.ts';
import { formatDate } from '../lib/format.ts';
import { useApi } from '../lib/query.ts';
import { Button, Empty, ErrorMessage, Field, Loading, TableWrap } from '../lib/ui.tsx';

export interface AuditEvent {
  id: string;
  action: string;
  actor: {
    accountId: string | null;
    managementKeyId: string | null;
    email: string | null;
    managementKeyName: string | null;
  };
  target: { type: string | null; id: string | null; email: string | null };
  detail: Record<string, unknown>;
  ip: string | null;
  createdAt: string;
}

interface AuditPage {
  items: AuditEvent[];
  nextCursor: string | null;
}

/** The actions an admin filters by most; any other name can be typed. */
const ACTIONS = [
  'admin.grant',
  'admin.credit_adjustment',
  'order.refund',
  'order.confirm_payment',
  'order.reject_payment',
  'promotion.create',
  'promotion.update',
  'admin.account.suspend',
  'admin.account.unsuspend',
  'admin.account.roles',
  'admin.catalog.change',
  'admin.reservation.resolve',
  'api_key.reveal',
  'reseller.grant',
];

// Internal bookkeeping, not what a reader of the log decides on.
const HIDDEN_DETAIL = new Set(['sessionId', 'idempotencyKey']);

function actorOf(event: AuditEvent): string {
  if (!event.actor.accountId) return 'the service';
  const who = event.actor.email ?? event.actor.accountId;
  return event.actor.managementKeyId
    ? `${who} (management key ${event.actor.managementKeyName ?? event.actor.managementKeyId})`
    : who;
}

function targetOf(event: AuditEvent): string {
  if (!event.target.type) return '–';
  if (event.target.email) return event.target.email;
  return `${event.target.type} ${event.target.id ?? ''}`.trim();
}

function detailOf(event: AuditEvent): string {
  return Object.entries(event.detail)
    .filter(([name, value]) => !HIDDEN_DETAIL.has(name) && value !== null && value !== undefined)
    .map(([name, value]) => `${name}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
    .join(' · ');
}

function queryOf(filters: { action: string; email: string; since: string; until: string }): string {
  const query = new URLSearchParams({ limit: '25' });
  if (filters.action) query.set('action', filters.action);
  if (filters.email) query.set('email', filters.email);
  if (filters.since) query.set('since', new Date(`${filters.since}T00:00:00Z`).toISOString());
  if (filters.until) query.set('until', new Date(`${filters.until}T00:00:00Z`).toISOString());
  return query.toString();
}

/**
 * The audit log: every action under its own name, who did it and to whom by email, what changed
 * (amounts, reasons), filtered by action, email and dates, paged through the API's cursors.
 */
export function AuditLog() {
  const empty = { action: '', email: '', since: '', until: '' };
  const [draft, setDraft] = useState(empty);
  const [filters, setFilters] = useState(empty);
  const first = useApi<AuditPage>(`/admin/audit?${queryOf(filters)}`);
  const [older, setOlder] = useState<{ for: string; items: AuditEvent[]; cursor: string | null } | null>(
    null,
  );
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [olderError, setOlderError] = useState<ApiError | null>(null);
  const query = queryOf(filters);
  const more = older?.for === query ? older : null;
  const items = [...(first.data?.items ?? []), ...(more?.items ?? [])];
  const cursor = more ? more.cursor : (first.data?.nextCursor ?? null);

  async function loadOlder() {
    if (!cursor) return;
    setLoadingOlder(true);
    setOlderError(null);
    try {
      const page = await api<AuditPage>('GET', `/admin/audit?${query}&cursor=${encodeURIComponent(cursor)}`);
      setOlder({ for: query, items: [...(more?.items ?? []), ...page.items], cursor: page.nextCursor });
    } catch (caught) {
      setOlderError(caught instanceof ApiError ? caught : null);
    } finally {
      setLoadingOlder(false);
    }
  }

  return (
    <>
      <search>
        <form
          className="row wrap align-end"
          onSubmit={(event) => {
            event.preventDefault();
            setFilters({ ...draft, email: draft.email.trim(), action: draft.action.trim() });
          }}
        >
          <Field label="Action" name="action">
            {(id, describedBy) => (
              <>
                <input
                  id={id}
                  name="action"
                  list="audit-actions"
                  value={draft.action}
                  onChange={(event) => setDraft({ ...draft, action: event.target.value })}
                  aria-describedby={describedBy}
                />
                <datalist id="audit-actions">
                  {ACTIONS.map((action) => (
                    <option key={action} value={action} />
                  ))}
                </datalist>
              </>
            )}
          </Field>
          <Field
            label="Actor or target email"
            name="email"
            value={draft.email}
            onChange={(email) => setDraft({ ...draft, email })}
          />
          <Field
            label="From (UTC day)"
            name="since"
            type="date"
            value={draft.since}
            onChange={(since) => setDraft({ ...draft, since })}
          />
          <Field
            label="Before (UTC day)"
            name="until"
            type="date"
            value={draft.until}
            onChange={(until) => setDraft({ ...draft, until })}
          />
          <Button type="submit">Filter</Button>
        </form>
      </search>
      <ErrorMessage error={first.error ?? olderError} />
      {first.loading && !first.data ? <Loading /> : null}
      {first.data && items.length === 0 ? (
        <Empty title="No audited action matches">
          Admin, reseller and management-key actions and key reveals appear here.
        </Empty>
      ) : null}
      {items.length > 0 ? (
        <TableWrap label="Audit log">
          <table data-testid="audit">
            <caption className="sr-only">Audit log, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Action</th>
                <th scope="col">Actor</th>
                <th scope="col">Target</th>
                <th scope="col">Details</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {items.map((event) => (
                <tr key={event.id}>
                  <td>{formatDate(event.createdAt)}</td>
                  <td>
                    <code>{event.action}</code>
                  </td>
                  <td>{actorOf(event)}</td>
                  <td>{targetOf(event)}</td>
                  <td className="detail">{detailOf(event) || '–'}</td>
                  <td>{event.ip ?? '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {cursor ? (
        <Button onClick={() => void loadOlder()} pending={loadingOlder}>
          Older entries
        </Button>
      ) : null}
    </>
  );
}
