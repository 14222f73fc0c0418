import { useState } from 'react';
import { api } from '../lib/api.ts';
import { formatDate } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
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

const SCOPES = [
  'customers:read',
  'customers:write',
  'grants:write',
  'usage:read',
  'keys:write',
  'keys:status',
];

interface ManagementKey {
  id: string;
  name: string;
  mask: string;
  scopes: string[];
  state: 'active' | 'expired' | 'revoked';
  lastUsedAt: string | null;
  createdAt: string;
}

/** Keys for the reseller's own software: explicit scopes, the secret shown once. */
export function ManagementKeysScreen() {
  const keys = useApi<ManagementKey[]>('/reseller/management-keys');
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [secret, setSecret] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<ManagementKey | null>(null);
  const create = useAction(async () => {
    const created = await api<{ secret: string }>('POST', '/reseller/management-keys', { name, scopes });
    setSecret(created.secret);
    setName('');
    setScopes([]);
    await keys.reload();
  });
  const revoke = useAction(async (id: string) => {
    await api('DELETE', `/reseller/management-keys/${id}`);
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
        <ErrorMessage error={create.error} fields={['name', 'scopes']} />
        <Field label="Name" name="name" value={name} onChange={setName} error={create.error} />
        <fieldset className="field">
          <legend>Scopes</legend>
          <div className="checks">
            {SCOPES.map((scope) => (
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
                <code>{scope}</code>
              </label>
            ))}
          </div>
          {create.error?.fieldErrors.scopes ? (
            <p className="field-error">{create.error.fieldErrors.scopes.join(' ')}</p>
          ) : null}
        </fieldset>
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
                    {key.scopes.join(', ')} · last used {formatDate(key.lastUsedAt)}
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
