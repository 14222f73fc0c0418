import { useState } from 'react';
import type { Schemas } from '../lib/client.ts';
import { formatDate } from '../lib/format.ts';
import { usePagedRead } from '../lib/query.ts';
import { Button, Empty, ErrorMessage, Field, Loading, TableWrap } from '../lib/ui.tsx';

type AuditEvent = Schemas['AuditEvent'];

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

function queryOf(filters: { action: string; email: string; since: string; until: string }) {
  const day = (value: string) => (value ? new Date(`${value}T00:00:00Z`).toISOString() : undefined);
  return {
    limit: 25,
    action: filters.action || undefined,
    email: filters.email || undefined,
    since: day(filters.since),
    until: day(filters.until),
  };
}

/**
 * The audit log: every action under its own name, who did it and to whom by email, what changed
 * (amounts, reasons), filtered by action, email and dates, paged through the API's cursors.
 */
export function AuditLog() {
  const empty = { action: '', email: '', since: '', until: '' };
  const [draft, setDraft] = useState(empty);
  const [filters, setFilters] = useState(empty);
  const log = usePagedRead('/api/v1/admin/audit', queryOf(filters), 'cursor');
  const items = log.data?.items ?? [];

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
      <ErrorMessage error={log.error} />
      {log.loading && !log.data ? <Loading /> : null}
      {log.data && items.length === 0 ? (
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
      {log.hasMore ? (
        <Button onClick={log.loadMore} pending={log.loadingMore}>
          Older entries
        </Button>
      ) : null}
    </>
  );
}
