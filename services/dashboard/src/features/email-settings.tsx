import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { Card, ErrorMessage } from '../lib/ui.tsx';

const SETTINGS = ['/api/v1/me/email-settings'] as const;

type Change = Schemas['EmailSettingsChange'];

const CHOICES: [keyof Change, string][] = [
  ['purchaseEmails', 'A receipt for each purchase'],
  ['lowBalanceEmails', 'A warning when my credit runs low'],
];

/** Billing-email opt-outs on the profile; security emails are always sent. */
export function EmailSettingsCard() {
  const queryClient = useQueryClient();
  const settings = useQuery({
    queryKey: SETTINGS,
    queryFn: () => unwrap(client.GET('/api/v1/me/email-settings')),
  });
  // The box changes at once, in the click's own render (the mutation's callbacks run later); the
  // service's answer, or a failure, then sets it right.
  const [shown, setShown] = useState<Change>({});
  const change = useMutation({
    mutationFn: (body: Change) => unwrap(client.PATCH('/api/v1/me/email-settings', { body })),
    onSuccess: (next) => queryClient.setQueryData(SETTINGS, next),
    onError: () => queryClient.invalidateQueries({ queryKey: SETTINGS }),
    onSettled: () => setShown({}),
  });
  return (
    <Card title="Emails">
      <ErrorMessage error={settings.error ?? change.error} />
      {settings.data ? (
        <fieldset className="field">
          <legend>Billing emails</legend>
          <div className="checks">
            {CHOICES.map(([field, label]) => (
              <label key={field} className="check">
                <input
                  type="checkbox"
                  name={field}
                  checked={shown[field] ?? settings.data[field]}
                  disabled={change.isPending}
                  onChange={(event) => {
                    const body = { [field]: event.target.checked };
                    setShown(body);
                    change.mutate(body);
                  }}
                />
                {label}
              </label>
            ))}
          </div>
        </fieldset>
      ) : null}
      <p className="muted">
        Security emails (password changed, two-factor sign-in turned on or off) are always sent: they warn you
        when someone else changes how your account is signed in to.
      </p>
    </Card>
  );
}
