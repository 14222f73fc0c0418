import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useFormKey, usePagedRead, useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
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
  SecretBox,
  StateBadge,
  TableWrap,
} from '../lib/ui.tsx';
import { ManagedSpendCaps } from './spend-caps.tsx';

type ApiKey = Schemas['ApiKey'];

export function ResellerCustomersScreen() {
  const customers = usePagedRead('/api/v1/reseller/customers', { limit: 50 });
  const holdings = useRead('/api/v1/me/balance');
  const [email, setEmail] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const create = useAction(async () => {
    const invitation = await unwrap(client.POST('/api/v1/reseller/customers', { body: { email } }));
    setCreated(invitation.email);
    setEmail('');
    await customers.reload();
  });
  const items = customers.data?.items ?? [];
  return (
    <Page title="Customers">
      {holdings.data ? (
        <p className="muted" data-testid="reseller-holdings-summary">
          You hold {groupDigits(holdings.data.remaining.tokens)} tokens and{' '}
          {groupDigits(holdings.data.remaining.credits)} credits to grant to your customers.
        </p>
      ) : null}
      <form
        className="card"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void create.execute();
        }}
      >
        <h2>Invite a customer</h2>
        <ErrorMessage error={create.error} fields={['email']} />
        <div className="row wrap align-end">
          <Field
            label="Email"
            name="email"
            type="email"
            value={email}
            onChange={setEmail}
            error={create.error}
          />
          <Button type="submit" kind="primary" pending={create.pending}>
            Invite
          </Button>
        </div>
        {created ? (
          <p className="alert success" role="status">
            {created} was invited by email. They become your customer when they accept.
          </p>
        ) : null}
      </form>
      <ErrorMessage error={customers.error} />
      {customers.loading && !customers.data ? <Loading /> : null}
      {customers.data && items.length === 0 ? (
        <Empty title="No customers yet">
          Invite one above; once they accept, grant them tokens or credit from your own holdings.
        </Empty>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <TableWrap label="Customers">
            <table data-testid="customers">
              <caption className="sr-only">Your customers</caption>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Status</th>
                  <th scope="col">Since</th>
                </tr>
              </thead>
              <tbody>
                {items.map((customer) => (
                  <tr key={customer.id}>
                    <td>
                      <Link to={`/reseller/customers/${customer.id}`}>{customer.email}</Link>
                    </td>
                    <td>
                      <StateBadge state={customer.status} />
                    </td>
                    <td>{formatDate(customer.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <MoreButton list={customers} />
        </Card>
      ) : null}
    </Page>
  );
}

/** One customer of the reseller: grants from its own holdings, usage and keys. */
export function ResellerCustomerScreen(props: { id: string }) {
  const params = { path: { id: props.id } };
  const customer = useRead('/api/v1/reseller/customers/{id}', { params });
  const usage = useRead('/api/v1/reseller/customers/{id}/usage', { params });
  const keys = useRead('/api/v1/reseller/customers/{id}/api-keys', { params });
  // What the reseller still holds: grants come out of it.
  const holdings = useRead('/api/v1/me/balance');
  const formKey = useFormKey();
  const [grantKind, setGrantKind] = useState<'credits' | 'package'>('credits');
  const [amount, setAmount] = useState('');
  const [packageId, setPackageId] = useState('');
  const [granted, setGranted] = useState<string | null>(null);
  const [keyName, setKeyName] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const grant = useAction(async () => {
    setGranted(null);
    const body =
      grantKind === 'credits'
        ? { credits: amount.trim() }
        : { packageId: packageId.trim(), ...(amount.trim() ? { tokens: amount.trim() } : {}) };
    // One key per submitted form: sent twice, it grants once.
    await unwrap(
      client.POST('/api/v1/reseller/customers/{id}/grants', {
        params,
        body,
        headers: { 'idempotency-key': formKey.key },
      }),
    );
    setGranted(
      grantKind === 'credits' ? `${groupDigits(amount.trim())} credits granted.` : 'Package tokens granted.',
    );
    setAmount('');
    formKey.renew();
    await Promise.all([usage.reload(), holdings.reload()]);
  });
  const createKey = useAction(async () => {
    const created = await unwrap(
      client.POST('/api/v1/reseller/customers/{id}/api-keys', { params, body: { name: keyName } }),
    );
    setSecret(created.secret);
    setKeyName('');
    await keys.reload();
  });
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const setState = useAction(async (keyId: string, status: 'active' | 'disabled' | 'revoked') => {
    await unwrap(
      client.PATCH('/api/v1/reseller/customers/{id}/api-keys/{keyId}/status', {
        params: { path: { id: props.id, keyId } },
        body: { status },
      }),
    );
    setRevoking(null);
    await keys.reload();
  });
  return (
    <Page title={customer.data?.email ?? 'Customer'} actions={<Link to="/reseller">All customers</Link>}>
      <ErrorMessage error={customer.error} />
      <div className="grid">
        <Card title="Balance">
          {usage.data ? (
            <dl className="stats">
              <div>
                <dt>Tokens left</dt>
                <dd>{groupDigits(usage.data.balance.remaining.tokens)}</dd>
              </div>
              <div>
                <dt>Credit</dt>
                <dd data-testid="customer-credits">{groupDigits(usage.data.balance.remaining.credits)}</dd>
              </div>
            </dl>
          ) : (
            <Loading />
          )}
        </Card>
        <form
          className="card"
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            void grant.execute();
          }}
        >
          <h2>Grant from your holdings</h2>
          <p className="muted" data-testid="reseller-holdings">
            You hold{' '}
            {holdings.data
              ? `${groupDigits(holdings.data.remaining.tokens)} tokens and ${groupDigits(holdings.data.remaining.credits)} credits`
              : '…'}
            .
          </p>
          <ErrorMessage error={grant.error} fields={['credits', 'packageId', 'tokens']} />
          <div className="field">
            <label htmlFor="grant-kind">What</label>
            <select
              id="grant-kind"
              value={grantKind}
              onChange={(event) => {
                setGrantKind(event.target.value as 'credits' | 'package');
                setAmount('');
                formKey.renew();
              }}
            >
              <option value="credits">Credit</option>
              <option value="package">Tokens of a package</option>
            </select>
          </div>
          {grantKind === 'package' ? (
            <Field
              label="Package id"
              name="packageId"
              value={packageId}
              onChange={(value) => {
                setPackageId(value);
                formKey.renew();
              }}
              error={grant.error}
            />
          ) : null}
          <Field
            label={grantKind === 'credits' ? 'Credits' : 'Tokens (empty: one whole package)'}
            name={grantKind === 'credits' ? 'credits' : 'tokens'}
            inputMode="numeric"
            value={amount}
            onChange={(value) => {
              setAmount(value);
              formKey.renew();
            }}
            error={grant.error}
          />
          {granted ? <p role="status">{granted}</p> : null}
          <Button type="submit" kind="primary" pending={grant.pending}>
            Grant
          </Button>
        </form>
      </div>
      <Card title="Usage, last 30 days">
        {usage.data && usage.data.days.length === 0 ? <p className="muted">No settled usage yet.</p> : null}
        <ul>
          {usage.data?.days.map((row) => (
            <li key={`${row.day}-${row.alias}`}>
              {row.day} · <code>{row.alias}</code>: {row.requests} requests, {groupDigits(row.inputTokens)}{' '}
              in, {groupDigits(row.outputTokens)} out
            </li>
          ))}
        </ul>
      </Card>
      <Card title="API keys">
        {secret ? (
          <SecretBox label="The customer's new key" secret={secret} onDone={() => setSecret(null)} />
        ) : null}
        <ErrorMessage error={keys.error ?? setState.error} />
        <form
          noValidate
          className="row wrap align-end"
          onSubmit={(event) => {
            event.preventDefault();
            void createKey.execute();
          }}
        >
          <Field label="Key name" name="name" value={keyName} onChange={setKeyName} error={createKey.error} />
          <Button type="submit" pending={createKey.pending}>
            Create key
          </Button>
        </form>
        <ul className="sessions">
          {keys.data?.map((key) => (
            <li key={key.id}>
              <div>
                <strong>{key.name}</strong> <StateBadge state={key.state} /> <code>{key.mask}</code>
              </div>
              <div className="row">
                {key.state === 'active' ? (
                  <Button onClick={() => void setState.execute(key.id, 'disabled')}>Disable</Button>
                ) : null}
                {key.state === 'disabled' ? (
                  <Button onClick={() => void setState.execute(key.id, 'active')}>Enable</Button>
                ) : null}
                {key.state === 'active' || key.state === 'disabled' ? (
                  <Button kind="danger" onClick={() => setRevoking(key)} label={`Revoke ${key.name}`}>
                    Revoke
                  </Button>
                ) : null}
              </div>
            </li>
          ))}
        </ul>
      </Card>
      <ManagedSpendCaps
        accountId={props.id}
        keys={(keys.data ?? []).filter((key) => key.state !== 'revoked')}
        viewer="reseller"
      />
      {revoking ? (
        <Confirm
          title={`Revoke "${revoking.name}"?`}
          confirmLabel="Revoke key"
          pending={setState.pending}
          error={setState.error}
          onCancel={() => setRevoking(null)}
          onConfirm={() => void setState.execute(revoking.id, 'revoked')}
        >
          <p>Every call with this key fails from now on. This cannot be undone.</p>
        </Confirm>
      ) : null}
    </Page>
  );
}
