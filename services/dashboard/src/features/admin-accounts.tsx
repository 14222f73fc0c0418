import { useState } from 'react';
import { api } from '../lib/api.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import type { Account } from '../lib/session.tsx';
import { Button, Card, Empty, ErrorMessage, Field, Loading, Page, StateBadge } from '../lib/ui.tsx';
import { ActivityTable } from './activity.tsx';

export function AdminAccountsScreen() {
  const [email, setEmail] = useState('');
  const [query, setQuery] = useState('');
  const accounts = useApi<{ items: Account[] }>(
    `/admin/accounts?limit=100${query ? `&email=${encodeURIComponent(query)}` : ''}`,
  );
  const items = accounts.data?.items ?? [];
  return (
    <Page title="Accounts">
      <search>
        <form
          className="card row wrap align-end"
          onSubmit={(event) => {
            event.preventDefault();
            setQuery(email.trim());
          }}
        >
          <Field label="Search by email" name="email" value={email} onChange={setEmail} />
          <Button type="submit">Search</Button>
        </form>
      </search>
      <ErrorMessage error={accounts.error} />
      {accounts.loading && !accounts.data ? <Loading /> : null}
      {accounts.data && items.length === 0 ? (
        <Empty title="No account matches">Try another part of the address.</Empty>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <div className="table-wrap">
            <table data-testid="accounts">
              <caption className="sr-only">Accounts, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Status</th>
                  <th scope="col">Roles</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {items.map((account) => (
                  <tr key={account.id}>
                    <td>
                      <Link to={`/admin/accounts/${account.id}`}>{account.email}</Link>
                    </td>
                    <td>
                      <StateBadge state={account.status} />
                    </td>
                    <td>
                      {[
                        account.isAdmin ? 'admin' : '',
                        account.isReseller ? 'reseller' : '',
                        account.resellerId ? 'customer of a reseller' : '',
                      ]
                        .filter(Boolean)
                        .join(', ') || 'customer'}
                    </td>
                    <td>{formatDate(account.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Card>
      ) : null}
    </Page>
  );
}

/** One account: suspend or reactivate, roles, reseller link, grants and credit adjustments with a note. */
export function AdminAccountScreen(props: { id: string }) {
  const base = `/admin/accounts/${encodeURIComponent(props.id)}`;
  const account = useApi<Account>(base);
  const balance = useApi<{ remaining: { tokens: string; credits: string } }>(`${base}/balance`);
  const [resellerId, setResellerId] = useState('');
  const [grant, setGrant] = useState({ kind: 'credits', value: '', note: '' });
  const [done, setDone] = useState<string | null>(null);
  const change = useAction(async (path: string, method: string, body: unknown, message: string) => {
    setDone(null);
    await api(method, `${base}${path}`, body);
    setDone(message);
    await Promise.all([account.reload(), balance.reload()]);
  });
  const data = account.data;
  return (
    <Page title={data?.email ?? 'Account'} actions={<Link to="/admin">All accounts</Link>}>
      <ErrorMessage
        error={account.error ?? change.error}
        fields={['credits', 'packageId', 'amount', 'note', 'resellerId']}
      />
      {done ? (
        <p className="alert success" role="status">
          {done}
        </p>
      ) : null}
      {data ? (
        <div className="grid">
          <Card title="Account">
            <p>
              <StateBadge state={data.status} /> {data.isAdmin ? 'admin ' : ''}
              {data.isReseller ? 'reseller ' : ''}
            </p>
            <p className="muted">
              Tokens {groupDigits(balance.data?.remaining.tokens ?? '0')} · credit{' '}
              {groupDigits(balance.data?.remaining.credits ?? '0')}
            </p>
            <div className="row wrap">
              <Button
                kind={data.status === 'active' ? 'danger' : 'primary'}
                onClick={() =>
                  void change.execute(
                    '/status',
                    'PATCH',
                    { status: data.status === 'active' ? 'suspended' : 'active' },
                    data.status === 'active' ? 'Account suspended.' : 'Account reactivated.',
                  )
                }
              >
                {data.status === 'active' ? 'Suspend' : 'Reactivate'}
              </Button>
              <Button
                onClick={() =>
                  void change.execute('/roles', 'PATCH', { reseller: !data.isReseller }, 'Roles changed.')
                }
              >
                {data.isReseller ? 'Remove reseller role' : 'Make reseller'}
              </Button>
              <Button
                onClick={() =>
                  void change.execute('/roles', 'PATCH', { admin: !data.isAdmin }, 'Roles changed.')
                }
              >
                {data.isAdmin ? 'Remove admin role' : 'Make admin'}
              </Button>
            </div>
            <form
              className="row wrap align-end"
              noValidate
              onSubmit={(event) => {
                event.preventDefault();
                void change.execute(
                  '/reseller',
                  'PUT',
                  { resellerId: resellerId.trim() || null },
                  'Reseller link changed.',
                );
              }}
            >
              <Field
                label="Reseller id (empty detaches)"
                name="resellerId"
                value={resellerId}
                onChange={setResellerId}
                error={change.error}
              />
              <Button type="submit">Set reseller</Button>
            </form>
          </Card>
          <form
            className="card"
            noValidate
            onSubmit={(event) => {
              event.preventDefault();
              if (grant.kind === 'adjust') {
                void change.execute(
                  '/credit-adjustments',
                  'POST',
                  { amount: grant.value.trim(), note: grant.note },
                  'Credit adjusted.',
                );
              } else {
                const body =
                  grant.kind === 'credits'
                    ? { credits: grant.value.trim() }
                    : { packageId: grant.value.trim() };
                void change.execute('/grants', 'POST', { ...body, note: grant.note }, 'Granted.');
              }
            }}
          >
            <h2>Grant or adjust</h2>
            <div className="field">
              <label htmlFor="grant-kind">What</label>
              <select
                id="grant-kind"
                value={grant.kind}
                onChange={(event) => setGrant({ ...grant, kind: event.target.value })}
              >
                <option value="credits">Grant credit</option>
                <option value="package">Grant a package (id)</option>
                <option value="adjust">Adjust credit (+/-)</option>
              </select>
            </div>
            <Field
              label={grant.kind === 'package' ? 'Package id' : 'Credits'}
              name={grant.kind === 'package' ? 'packageId' : grant.kind === 'adjust' ? 'amount' : 'credits'}
              value={grant.value}
              onChange={(value) => setGrant({ ...grant, value })}
              error={change.error}
            />
            <Field
              label="Note (required)"
              name="note"
              value={grant.note}
              onChange={(note) => setGrant({ ...grant, note })}
              error={change.error}
            />
            <Button type="submit" kind="primary" pending={change.pending}>
              Apply
            </Button>
          </form>
        </div>
      ) : (
        <Loading />
      )}
      <Card title="Recent activity">
        <ActivityTable source={`${base}/activity`} limit={10} caption="Recent calls of this account" />
      </Card>
    </Page>
  );
}
