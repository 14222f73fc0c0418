import { useState } from 'react';
import { api } from '../lib/api.ts';
import { useAction } from '../lib/query.ts';
import { type Account, useSession } from '../lib/session.tsx';
import { Button, Card, ErrorMessage, Field, Page } from '../lib/ui.tsx';

export function ProfileScreen() {
  const { account, setAccount } = useSession();
  const [displayName, setDisplayName] = useState(account?.displayName ?? '');
  const [saved, setSaved] = useState(false);
  const [currentPassword, setCurrentPassword] = useState('');
  const [newPassword, setNewPassword] = useState('');
  const [changed, setChanged] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    setAccount(await api<Account>('PATCH', '/me', { displayName: displayName.trim() || null }));
    setSaved(true);
  });
  const change = useAction(async () => {
    setChanged(false);
    await api('POST', '/me/password', { currentPassword, newPassword });
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
    </Page>
  );
}
