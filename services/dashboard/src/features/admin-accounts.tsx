import { useEffect, useState } from 'react';
import { ApiError } from '../lib/api.ts';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { CreditMoney } from '../lib/credit.tsx';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useFormKey, usePagedRead, useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import type { Account } from '../lib/session.tsx';
import {
  Button,
  Card,
  Confirm,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  MoreButton,
  Page,
  StateBadge,
  TableWrap,
} from '../lib/ui.tsx';
import { ActivityTable } from './activity.tsx';
import { ManagedSpendCaps } from './spend-caps.tsx';

/** Opens an account for someone; they are emailed a link to choose their password. */
function CreateAccountForm(props: { onCreated: (account: Account) => void; onCancel: () => void }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const create = useAction(async () => {
    const account = await unwrap(
      client.POST('/api/v1/admin/accounts', {
        body: { email: email.trim(), ...(name.trim() ? { displayName: name.trim() } : {}) },
      }),
    );
    props.onCreated(account);
  });
  return (
    <form
      className="card stack"
      aria-label="New account"
      onSubmit={(event) => {
        event.preventDefault();
        void create.execute();
      }}
    >
      <h2>New account</h2>
      <ErrorMessage error={create.error} fields={['email', 'displayName']} />
      <Field
        label="Email"
        name="email"
        type="email"
        value={email}
        onChange={setEmail}
        error={create.error}
        required
      />
      <Field
        label="Name (optional)"
        name="displayName"
        value={name}
        onChange={setName}
        error={create.error}
      />
      <p className="hint">They are emailed a link to choose their password.</p>
      <div className="row">
        <Button type="submit" kind="primary" pending={create.pending}>
          Create account
        </Button>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </form>
  );
}

export function AdminAccountsScreen() {
  const [email, setEmail] = useState('');
  const [query, setQuery] = useState('');
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Account | null>(null);
  const [days, setDays] = useState(30);
  const accounts = usePagedRead('/api/v1/admin/account-summaries', {
    limit: 50,
    days,
    ...(query ? { email: query } : {}),
  });
  const items = accounts.data?.items ?? [];
  return (
    <Page
      title="Accounts"
      actions={
        creating ? null : (
          <Button kind="primary" onClick={() => setCreating(true)}>
            New account
          </Button>
        )
      }
    >
      {created ? (
        <p className="alert success" role="status">
          Created <Link to={`/admin/accounts/${created.id}`}>{created.email}</Link>: a link to choose a
          password was emailed.
        </p>
      ) : null}
      {creating ? (
        <CreateAccountForm
          onCancel={() => setCreating(false)}
          onCreated={(account) => {
            setCreating(false);
            setCreated(account);
            void accounts.reload();
          }}
        />
      ) : null}
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
          <div className="field">
            <label htmlFor="accounts-days">Spend over</label>
            <select id="accounts-days" value={days} onChange={(event) => setDays(Number(event.target.value))}>
              {[7, 30, 90, 365].map((count) => (
                <option key={count} value={count}>
                  the last {count} days
                </option>
              ))}
            </select>
          </div>
        </form>
      </search>
      <ErrorMessage error={accounts.error} />
      {accounts.loading && !accounts.data ? <Loading /> : null}
      {accounts.data && items.length === 0 ? (
        <Empty title="No account matches">Try another part of the address.</Empty>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <TableWrap label="Accounts">
            <table data-testid="accounts">
              <caption className="sr-only">
                Accounts, newest first, with balance, spend over the last {days} days and last call
              </caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Credit (money)</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Spent, last {days} days</th>
                  <th scope="col">Last call</th>
                  <th scope="col">Status</th>
                  <th scope="col">Roles</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {items.map(({ account, balance, spent, lastCallAt }) => (
                  <tr key={account.id}>
                    <td>
                      <Link to={`/admin/accounts/${account.id}`}>{account.email}</Link>
                    </td>
                    <td>
                      {groupDigits(balance.remaining.credits)}{' '}
                      <CreditMoney credits={balance.remaining.credits} />
                    </td>
                    <td>{groupDigits(balance.remaining.tokens)}</td>
                    <td data-testid="account-spent">
                      {groupDigits(spent.credits)} credits{' '}
                      <CreditMoney credits={spent.credits} precision="exact" />
                      {spent.tokens !== '0' ? (
                        <div className="hint">{groupDigits(spent.tokens)} tokens</div>
                      ) : null}
                      <div className="hint">
                        {groupDigits(spent.requests)} {spent.requests === '1' ? 'call' : 'calls'}
                      </div>
                    </td>
                    <td>{lastCallAt ? formatDate(lastCallAt) : 'never'}</td>
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
          </TableWrap>
          <MoreButton list={accounts} />
        </Card>
      ) : null}
    </Page>
  );
}

type GrantKind = 'credits' | 'package' | 'adjust';

/** A change of the account waiting for the admin's confirmation. */
/** A change of an account's status, roles or reseller link, as its route takes it. */
type AccountChange =
  | { path: '/status'; body: Schemas['AccountStatusRequest'] }
  | { path: '/roles'; body: Schemas['AccountRolesRequest'] }
  | { path: '/reseller'; body: Schemas['AccountResellerRequest'] };

function sendChange(id: string, change: AccountChange) {
  const params = { path: { id } };
  switch (change.path) {
    case '/status':
      return unwrap(client.PATCH('/api/v1/admin/accounts/{id}/status', { params, body: change.body }));
    case '/roles':
      return unwrap(client.PATCH('/api/v1/admin/accounts/{id}/roles', { params, body: change.body }));
    case '/reseller':
      return unwrap(client.PUT('/api/v1/admin/accounts/{id}/reseller', { params, body: change.body }));
  }
}

type PendingChange = AccountChange & {
  title: string;
  text: string;
  confirmLabel: string;
  done: string;
};

function grantSummary(kind: GrantKind, value: string, email: string, packageName = value): string {
  const amount = groupDigits(value.trim());
  if (kind === 'package') return `Grant the package ${packageName} to ${email}`;
  if (kind === 'adjust')
    return value.trim().startsWith('-')
      ? `Take ${groupDigits(value.trim().slice(1))} credits from ${email}`
      : `Add ${amount} credits to ${email}`;
  return `Grant ${amount} credits to ${email}`;
}

/**
 * One account: suspend or reactivate, roles, reseller link, grants and credit adjustments. Every
 * change is confirmed in a dialog naming the account (and the amount); money needs a reason, kept
 * in the audit log, and each submitted grant form carries one idempotency key, so a double
 * submission or a retry after a lost answer moves the money once.
 */
export function AdminAccountScreen(props: { id: string }) {
  const params = { path: { id: props.id } };
  const account = useRead('/api/v1/admin/accounts/{id}', { params });
  const balance = useRead('/api/v1/admin/accounts/{id}/balance', { params });
  const keys = useRead('/api/v1/admin/accounts/{id}/api-keys', { params });
  const packages = useRead('/api/v1/admin/catalog');
  const packageName = (id: string) => packages.data?.packages.find((pack) => pack.id === id)?.name ?? id;
  const [resellerId, setResellerId] = useState('');
  const [grant, setGrant] = useState<{ kind: GrantKind; value: string; note: string }>({
    kind: 'credits',
    value: '',
    note: '',
  });
  const [grantErrors, setGrantErrors] = useState<ApiError | null>(null);
  const [confirmingGrant, setConfirmingGrant] = useState(false);
  const [pendingChange, setPendingChange] = useState<PendingChange | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const formKey = useFormKey();
  const change = useAction(async (pending: PendingChange) => {
    setDone(null);
    await sendChange(props.id, pending);
    setDone(pending.done);
    setPendingChange(null);
    await Promise.all([account.reload(), balance.reload()]);
  });
  const apply = useAction(async () => {
    setDone(null);
    const email = account.data?.email ?? 'the account';
    const summary = grantSummary(grant.kind, grant.value, email, packageName(grant.value));
    const headers = { 'idempotency-key': formKey.key };
    if (grant.kind === 'adjust') {
      await unwrap(
        client.POST('/api/v1/admin/accounts/{id}/credit-adjustments', {
          params,
          body: { amount: grant.value.trim(), note: grant.note.trim() },
          headers,
        }),
      );
    } else {
      const body =
        grant.kind === 'credits' ? { credits: grant.value.trim() } : { packageId: grant.value.trim() };
      await unwrap(
        client.POST('/api/v1/admin/accounts/{id}/grants', {
          params,
          body: { ...body, note: grant.note.trim() },
          headers,
        }),
      );
    }
    // Done: the form starts empty with a new key, so Apply again is a new, deliberate grant.
    setGrant({ kind: grant.kind, value: '', note: '' });
    formKey.renew();
    setConfirmingGrant(false);
    setDone(
      `${summary
        .replace(/^Grant/, 'Granted')
        .replace(/^Add/, 'Added')
        .replace(/^Take/, 'Took')}.`,
    );
    await balance.reload();
  });
  // A refusal of a field (an unknown package, a balance that would go below zero) is shown beside
  // that field: the dialog closes on it.
  useEffect(() => {
    if (apply.error && Object.keys(apply.error.fieldErrors).length > 0) setConfirmingGrant(false);
  }, [apply.error]);
  const editGrant = (next: Partial<typeof grant>) => {
    setGrant({ ...grant, ...next });
    setGrantErrors(null);
    // Other values are another form: another key.
    formKey.renew();
  };
  const valueField = grant.kind === 'package' ? 'packageId' : grant.kind === 'adjust' ? 'amount' : 'credits';
  const formError = grantErrors ?? (confirmingGrant ? null : apply.error);
  const data = account.data;
  return (
    <Page title={data?.email ?? 'Account'} actions={<Link to="/admin">All accounts</Link>}>
      <ErrorMessage error={account.error ?? (pendingChange ? null : change.error)} fields={['resellerId']} />
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
            <p className="muted" data-testid="account-balance">
              Tokens {groupDigits(balance.data?.remaining.tokens ?? '0')} · credit{' '}
              {groupDigits(balance.data?.remaining.credits ?? '0')}
            </p>
            <div className="row wrap">
              <Button
                kind={data.status === 'active' ? 'danger' : 'primary'}
                onClick={() =>
                  setPendingChange(
                    data.status === 'active'
                      ? {
                          title: `Suspend ${data.email}?`,
                          text: 'Every key of the account stops working at once, and the account cannot sign in until reactivated.',
                          confirmLabel: 'Suspend',
                          path: '/status',
                          body: { status: 'suspended' },
                          done: `${data.email} is suspended.`,
                        }
                      : {
                          title: `Reactivate ${data.email}?`,
                          text: 'The account can sign in again and its keys work again.',
                          confirmLabel: 'Reactivate',
                          path: '/status',
                          body: { status: 'active' },
                          done: `${data.email} is active again.`,
                        },
                  )
                }
              >
                {data.status === 'active' ? 'Suspend' : 'Reactivate'}
              </Button>
              <Button
                onClick={() =>
                  setPendingChange({
                    title: data.isReseller
                      ? `Remove the reseller role of ${data.email}?`
                      : `Make ${data.email} a reseller?`,
                    text: data.isReseller
                      ? 'It can no longer manage its customers or use its management keys.'
                      : 'It can invite customers, grant them from its own holdings and create management keys.',
                    confirmLabel: data.isReseller ? 'Remove reseller role' : 'Make reseller',
                    path: '/roles',
                    body: { reseller: !data.isReseller },
                    done: data.isReseller
                      ? `${data.email} is no longer a reseller.`
                      : `${data.email} is now a reseller.`,
                  })
                }
              >
                {data.isReseller ? 'Remove reseller role' : 'Make reseller'}
              </Button>
              <Button
                onClick={() =>
                  setPendingChange({
                    title: data.isAdmin
                      ? `Remove the admin role of ${data.email}?`
                      : `Make ${data.email} an admin?`,
                    text: data.isAdmin
                      ? 'It loses every admin screen and action.'
                      : 'It can grant money, refund orders, change roles and edit the catalogue.',
                    confirmLabel: data.isAdmin ? 'Remove admin role' : 'Make admin',
                    path: '/roles',
                    body: { admin: !data.isAdmin },
                    done: data.isAdmin
                      ? `${data.email} is no longer an admin.`
                      : `${data.email} is now an admin.`,
                  })
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
                const target = resellerId.trim();
                setPendingChange({
                  title: target
                    ? `Attach ${data.email} to a reseller?`
                    : `Detach ${data.email} from its reseller?`,
                  text: target
                    ? `The reseller ${target} will manage this account's keys and may grant it from its own holdings.`
                    : 'No reseller will manage this account any more.',
                  confirmLabel: target ? 'Attach' : 'Detach',
                  path: '/reseller',
                  body: { resellerId: target || null },
                  done: 'Reseller link changed.',
                });
              }}
            >
              <Field
                label="Reseller id (empty detaches)"
                name="resellerId"
                value={resellerId}
                onChange={setResellerId}
                error={pendingChange ? null : change.error}
              />
              <Button type="submit">Set reseller</Button>
            </form>
          </Card>
          <form
            className="card"
            noValidate
            aria-labelledby="grant-title"
            onSubmit={(event) => {
              event.preventDefault();
              setDone(null);
              apply.clearError();
              const errors: Record<string, string[]> = {};
              const value = grant.value.trim();
              if (!value)
                errors[valueField] = [grant.kind === 'package' ? 'Choose a package.' : 'Enter an amount.'];
              else if (grant.kind === 'credits' && !/^[1-9][0-9]*$/.test(value))
                errors[valueField] = ['Use a positive whole number, e.g. 5000.'];
              else if (grant.kind === 'adjust' && !/^-?[1-9][0-9]*$/.test(value))
                errors[valueField] = ['Use a non-zero whole number, e.g. -500 or 500.'];
              if (!grant.note.trim()) errors.note = ['Say why (the reason is kept in the audit log).'];
              if (Object.keys(errors).length > 0) {
                setGrantErrors(
                  new ApiError(422, 'validation_failed', 'Check the marked fields.', errors, null),
                );
                return;
              }
              setGrantErrors(null);
              setConfirmingGrant(true);
            }}
          >
            <h2 id="grant-title">Grant or adjust</h2>
            <ErrorMessage error={formError} fields={[valueField, 'note']} />
            <div className="field">
              <label htmlFor="grant-kind">What</label>
              <select
                id="grant-kind"
                value={grant.kind}
                // Another kind starts empty: a typed amount never carries over into a package id.
                onChange={(event) => editGrant({ kind: event.target.value as GrantKind, value: '' })}
              >
                <option value="credits">Grant credit</option>
                <option value="package">Grant a package</option>
                <option value="adjust">Adjust credit (+/-)</option>
              </select>
            </div>
            {grant.kind === 'package' ? (
              <Field label="Package" name="packageId" error={formError}>
                {(id, describedBy) => (
                  <select
                    id={id}
                    value={grant.value}
                    onChange={(event) => editGrant({ value: event.target.value })}
                    aria-describedby={describedBy}
                    aria-invalid={Boolean(formError?.fieldErrors.packageId) || undefined}
                  >
                    <option value="">Choose a package</option>
                    {(packages.data?.packages ?? []).map((pack) => (
                      <option key={pack.id} value={pack.id}>
                        {pack.name} ({groupDigits(pack.tokens)} tokens)
                        {pack.published ? '' : ', unpublished'}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
            ) : (
              <Field
                key={grant.kind}
                label={grant.kind === 'adjust' ? 'Credits (+/-)' : 'Credits'}
                name={valueField}
                value={grant.value}
                onChange={(value) => editGrant({ value })}
                error={formError}
                inputMode="numeric"
              />
            )}
            <Field
              label="Reason (required)"
              name="note"
              value={grant.note}
              onChange={(note) => editGrant({ note })}
              error={formError}
              hint="Kept in the audit log and as the ledger row's cause."
            />
            <Button type="submit" kind="primary">
              Apply
            </Button>
          </form>
        </div>
      ) : (
        <Loading />
      )}
      {confirmingGrant && data ? (
        <Confirm
          title={`${grantSummary(grant.kind, grant.value, data.email, packageName(grant.value))}?`}
          confirmLabel={grant.kind === 'adjust' ? 'Adjust' : 'Grant'}
          pending={apply.pending}
          error={apply.error}
          onConfirm={() => void apply.execute()}
          onCancel={() => setConfirmingGrant(false)}
        >
          <p>
            Reason: <q>{grant.note.trim()}</q>
          </p>
        </Confirm>
      ) : null}
      {pendingChange ? (
        <Confirm
          title={pendingChange.title}
          confirmLabel={pendingChange.confirmLabel}
          pending={change.pending}
          error={change.error}
          onConfirm={() => void change.execute(pendingChange)}
          onCancel={() => {
            setPendingChange(null);
            change.clearError();
          }}
        >
          <p>{pendingChange.text}</p>
        </Confirm>
      ) : null}
      <ManagedSpendCaps
        accountId={props.id}
        keys={(keys.data ?? []).filter((key) => key.state !== 'revoked')}
        viewer="admin"
      />
      <Card title="Recent activity">
        <ActivityTable accountId={props.id} limit={10} caption="Recent calls of this account" />
      </Card>
    </Page>
  );
}
