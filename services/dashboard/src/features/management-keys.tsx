import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate } from '../lib/format.ts';
import { useAction, useRead } from '../lib/query.ts';
import {
  Button,
  Card,
  Confirm,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  Page,
  SecretBox,
  StateBadge,
} from '../lib/ui.tsx';

/** Each scope with what it lets the software do (docs/api/resellers.md). */
const SCOPES = [
  ['customers:read', 'List your customers and your invitations.'],
  ['customers:write', 'Invite customers by email.'],
  ['grants:write', 'Grant customers credit or package tokens from your own holdings (moves money).'],
  ['usage:read', "Read a customer's balance and usage per day and model."],
  ['keys:write', 'Create API keys for customers (the secret is in that answer only).'],
  ['keys:status', "Disable, enable or revoke a customer's API keys."],
] as const;

type ManagementKey = Schemas['ManagementKey'];

/** Keys for the reseller's own software: explicit scopes, the secret shown once. */
export function ManagementKeysScreen() {
  const keys = useRead('/api/v1/reseller/management-keys');
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<ManagementKey['scopes']>([]);
  const [expiresOn, setExpiresOn] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<ManagementKey | null>(null);
  const create = useAction(async () => {
    const created = await unwrap(
      client.POST('/api/v1/reseller/management-keys', {
        body: {
          name,
          scopes,
          expiresAt: expiresOn ? new Date(`${expiresOn}T23:59:59Z`).toISOString() : null,
        },
      }),
    );
    setSecret(created.secret);
    setName('');
    setScopes([]);
    setExpiresOn('');
    await keys.reload();
  });
  const revoke = useAction(async (id: string) => {
    await unwrap(client.DELETE('/api/v1/reseller/management-keys/{id}', { params: { path: { id } } }));
    setRevoking(null);
    await keys.reload();
  });
  return (
    <Page title="Management keys">
      {secret ? (
        <SecretBox label="New management key" secret={secret} onDone={() => setSecret(null)} />
      ) : null}
      <form
        className="card"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void create.execute();
        }}
      >
        <h2>Create a management key</h2>
        <p className="hint">
          For your own software, sent as Authorization: Bearer to /api/v1/reseller-management.
        </p>
        <ErrorMessage error={create.error} fields={['name', 'scopes', 'expiresAt']} />
        <Field label="Name" name="name" value={name} onChange={setName} error={create.error} />
        <fieldset className="field">
          <legend>Scopes</legend>
          <div className="checks">
            {SCOPES.map(([scope, description]) => (
              <label key={scope} className="check">
                <input
                  type="checkbox"
                  checked={scopes.includes(scope)}
                  onChange={(event) =>
                    setScopes(
                      event.target.checked ? [...scopes, scope] : scopes.filter((item) => item !== scope),
                    )
                  }
                />
                <span>
                  <code>{scope}</code> <span className="muted">{description}</span>
                </span>
              </label>
            ))}
          </div>
          {create.error?.fieldErrors.scopes ? (
            <p className="field-error">{create.error.fieldErrors.scopes.join(' ')}</p>
          ) : null}
        </fieldset>
        <Field
          label="Expires on (optional, end of day UTC)"
          name="expiresAt"
          type="date"
          value={expiresOn}
          onChange={setExpiresOn}
          error={create.error}
          hint="Empty: the key works until revoked."
        />
        <Button type="submit" kind="primary" pending={create.pending}>
          Create key
        </Button>
      </form>
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data ? <Loading /> : null}
      {keys.data && keys.data.length === 0 ? (
        <Empty title="No management keys">Create one above to manage customers from your own software.</Empty>
      ) : null}
      {keys.data && keys.data.length > 0 ? (
        <Card>
          <ul className="sessions" data-testid="management-keys">
            {keys.data.map((key) => (
              <li key={key.id}>
                <div>
                  <strong>{key.name}</strong> <StateBadge state={key.state} /> <code>{key.mask}</code>
                  <p className="muted">
                    {key.scopes.join(', ')} · last used {formatDate(key.lastUsedAt)} ·{' '}
                    {key.expiresAt ? `expires ${formatDate(key.expiresAt)}` : 'no expiry'}
                  </p>
                </div>
                {key.state === 'active' ? (
                  <Button kind="danger" onClick={() => setRevoking(key)} label={`Revoke ${key.name}`}>
                    Revoke
                  </Button>
                ) : null}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
      {revoking ? (
        <Confirm
          title={`Revoke "${revoking.name}"?`}
          confirmLabel="Revoke key"
          pending={revoke.pending}
          error={revoke.error}
          onCancel={() => setRevoking(null)}
          onConfirm={() => void revoke.execute(revoking.id)}
        >
          <p>Software using this key is refused from its next request.</p>
        </Confirm>
      ) : null}
    </Page>
  );
}
