import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate } from '../lib/format.ts';
import { Button, Card, ErrorMessage, Field } from '../lib/ui.tsx';
import { TwoFactorCodeField } from './two-factor-code.tsx';

const STATUS = ['/api/v1/me/two-factor'] as const;

/** Two-factor sign-in on the profile: set up with an authenticator app, recovery codes, turn off. */
export function TwoFactorCard() {
  const status = useQuery({ queryKey: STATUS, queryFn: () => unwrap(client.GET('/api/v1/me/two-factor')) });
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  return (
    <Card title="Two-factor sign-in">
      <ErrorMessage error={status.error} />
      {recoveryCodes ? (
        <RecoveryCodes codes={recoveryCodes} onDone={() => setRecoveryCodes(null)} />
      ) : status.data?.enabled ? (
        <TurnOff status={status.data} />
      ) : status.data ? (
        <SetUp onEnabled={setRecoveryCodes} />
      ) : null}
    </Card>
  );
}

function SetUp(props: { onEnabled: (codes: string[]) => void }) {
  const queryClient = useQueryClient();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const enrol = useMutation({
    mutationFn: () => unwrap(client.POST('/api/v1/me/two-factor/enrol', { body: { password } })),
    onSuccess: () => setPassword(''),
  });
  const confirm = useMutation({
    mutationFn: () => unwrap(client.POST('/api/v1/me/two-factor/confirm', { body: { code } })),
    onSuccess: (result) => {
      props.onEnabled(result.recoveryCodes);
      void queryClient.invalidateQueries({ queryKey: STATUS });
    },
  });
  const enrolment: Schemas['TwoFactorEnrolment'] | undefined = enrol.data;
  if (!enrolment) {
    return (
      <form noValidate onSubmit={submitWith(() => enrol.mutate())}>
        <p>Off. With it on, signing in also asks for a code from an authenticator app on your phone.</p>
        <ErrorMessage error={enrol.error} fields={['password']} />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={setPassword}
          error={enrol.error}
        />
        <Button type="submit" kind="primary" pending={enrol.isPending}>
          Set up two-factor sign-in
        </Button>
      </form>
    );
  }
  return (
    <form noValidate onSubmit={submitWith(() => confirm.mutate())}>
      <p>Scan the QR code with your authenticator app, or type the key, then enter the code it shows.</p>
      <img className="qr" src={enrolment.qrCode} alt="QR code of the key, for an authenticator app" />
      <p>
        Key: <code className="secret-key">{enrolment.secret}</code>
      </p>
      <ErrorMessage error={confirm.error} fields={['code']} />
      <TwoFactorCodeField
        label="Code from the app"
        name="code"
        recovery={false}
        value={code}
        onChange={setCode}
        error={confirm.error}
      />
      <Button type="submit" kind="primary" pending={confirm.isPending}>
        Turn on
      </Button>
    </form>
  );
}

function RecoveryCodes(props: { codes: string[]; onDone: () => void }) {
  return (
    <div>
      <p role="status">
        Two-factor sign-in is on. If you lose your phone, sign in with one of these recovery codes: each works
        once, and they are not shown again.
      </p>
      <ul className="recovery-codes" aria-label="Recovery codes">
        {props.codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ul>
      <Button kind="primary" onClick={props.onDone}>
        I have saved them
      </Button>
    </div>
  );
}

function TurnOff(props: { status: Schemas['TwoFactorStatus'] }) {
  const queryClient = useQueryClient();
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const disable = useMutation({
    mutationFn: () => unwrap(client.POST('/api/v1/me/two-factor/disable', { body: { password, code } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: STATUS }),
  });
  return (
    <form noValidate onSubmit={submitWith(() => disable.mutate())}>
      <p>
        On since {props.status.enabledAt ? formatDate(props.status.enabledAt) : 'now'};{' '}
        {props.status.recoveryCodesLeft} recovery codes left.
      </p>
      <ErrorMessage error={disable.error} fields={['password', 'code']} />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="current-password"
        value={password}
        onChange={setPassword}
        error={disable.error}
      />
      <TwoFactorCodeField
        label="Code from the app, or a recovery code"
        name="code"
        recovery
        value={code}
        onChange={setCode}
        error={disable.error}
      />
      <Button type="submit" kind="danger" pending={disable.isPending}>
        Turn off two-factor sign-in
      </Button>
    </form>
  );
}

function submitWith(run: () => void) {
  return (event: FormEvent) => {
    event.preventDefault();
    run();
  };
}
