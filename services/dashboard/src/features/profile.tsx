import { useState } from 'react';
import { client, unwrap } from '../lib/client.ts';
import { useAction, useRead } from '../lib/query.ts';
import { useSession } from '../lib/session.tsx';
import { Button, Card, Confirm, ErrorMessage, Field, Page } from '../lib/ui.tsx';
import { EmailSettingsCard } from './email-settings.tsx';
import { TwoFactorCard } from './two-factor.tsx';

export function ProfileScreen() {
  const { account, setAccount } = useSession();
  const [displayName, setDisplayName] = useState(account?.displayName ?? '');
  const [saved, setSaved] = useState(false);
  const [currentPassword, setCurrentPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const [changed, setChanged] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    setAccount(
      await unwrap(client.PATCH('/api/v1/me', { body: { displayName: displayName.trim() || null } })),
    );
    setSaved(true);
  });
  const change = useAction(async () => {
    setChanged(false);
    await unwrap(client.POST('/api/v1/me/password', { body: { currentPassword, newPassword } }));
    setCurrentPassword('');
    setNewPassword('');
    setChanged(true);
  });
  return (
    <Page title="Profile">
      <Card title="Account">
        <p>
          Email: <strong>{account?.email}</strong>
        </p>
        <form
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            void save.execute();
          }}
        >
          <ErrorMessage error={save.error} fields={['displayName']} />
          <Field
            label="Name"
            name="displayName"
            autoComplete="name"
            value={displayName}
            onChange={setDisplayName}
            error={save.error}
          />
          {saved ? <p role="status">Saved.</p> : null}
          <Button type="submit" kind="primary" pending={save.pending}>
            Save
          </Button>
        </form>
      </Card>
      <Card title="Password">
        <form
          noValidate
          onSubmit={(event) => {
            event.preventDefault();
            void change.execute();
          }}
        >
          <ErrorMessage error={change.error} fields={['currentPassword', 'newPassword']} />
          <Field
            label="Current password"
            name="currentPassword"
            type="password"
            autoComplete="current-password"
            value={currentPassword}
            onChange={setCurrentPassword}
            error={change.error}
          />
          <Field
            label="New password"
            name="newPassword"
            type="password"
            autoComplete="new-password"
            value={newPassword}
            onChange={setNewPassword}
            error={change.error}
            hint="At least 8 characters."
          />
          {changed ? <p role="status">Password changed. Your other sessions were ended.</p> : null}
          <Button type="submit" kind="primary" pending={change.pending}>
            Change password
          </Button>
        </form>
      </Card>
      <TwoFactorCard />
      <EmailSettingsCard />
      <ProviderCard />
    </Page>
  );
}

/** The reseller that manages this account, which the customer can leave at any time. */
function ProviderCard() {
  const own = useRead('/api/v1/me/reseller');
  const [confirming, setConfirming] = useState(false);
  const [ended, setEnded] = useState<number | null>(null);
  const end = useAction(async () => {
    const result = await unwrap(client.DELETE('/api/v1/me/reseller'));
    setConfirming(false);
    setEnded(result.revokedKeys);
    await own.reload();
  });
  const reseller = own.data?.reseller ?? null;
  return (
    <Card title="Provider">
      <ErrorMessage error={own.error} />
      {reseller ? (
        <>
          <p data-testid="provider">
            Managed by <strong>{reseller.displayName ?? reseller.email}</strong> ({reseller.email}): they can
            create and manage API keys that spend this account's balance, grant it credit and read its usage.
          </p>
          <Button kind="danger" onClick={() => setConfirming(true)}>
            End this provider's access
          </Button>
        </>
      ) : own.data ? (
        <p>No provider manages this account.</p>
      ) : null}
      {ended !== null ? (
        <p role="status">Access ended. {ended} key(s) the provider made were revoked.</p>
      ) : null}
      {confirming && reseller ? (
        <Confirm
          title="End the provider's access?"
          confirmLabel="End access"
          pending={end.pending}
          error={end.error}
          onCancel={() => setConfirming(false)}
          onConfirm={() => void end.execute()}
        >
          <p>
            {reseller.email} can no longer see or manage this account, and the keys it made for you are
            revoked. Credit it granted stays yours.
          </p>
        </Confirm>
      ) : null}
    </Card>
  );
}
