import { type FormEvent, useState } from 'react';
import { client, unwrap } from '../lib/client.ts';
import { useAction } from '../lib/query.ts';
import { Link, navigate, useLocation } from '../lib/router.tsx';
import { useSession } from '../lib/session.tsx';
import { Button, ErrorMessage, Field, Page } from '../lib/ui.tsx';
import { TwoFactorCodeField } from './two-factor-code.tsx';

/** Only same-site paths are followed after login, never another origin. */
function safeNext(value: string | null): string {
  return value?.startsWith('/') && !value.startsWith('//') ? value : '/';
}

/**
 * The address just registered, handed to the Log in screen in memory (not in the URL, where it
 * would stay in the history).
 */
let registeredEmail = '';

export function LoginScreen() {
  const { search } = useLocation();
  const { setAccount } = useSession();
  const [email, setEmail] = useState(() => {
    const remembered = registeredEmail;
    registeredEmail = '';
    return remembered;
  });
  const [password, setPassword] = useState('');
  const [twoFactorCode, setTwoFactorCode] = useState('');
  const login = useAction(async () => {
    const result = await unwrap(
      client.POST('/api/v1/auth/login', {
        body: { email, password, ...(askCode ? { twoFactorCode } : {}) },
      }),
    );
    setAccount(result.account);
    navigate(safeNext(search.get('next')));
  });
  // Asked for once the service says the account has two-factor sign-in on.
  const [codeAsked, setCodeAsked] = useState(false);
  const askCode = codeAsked || Boolean(login.error?.fieldErrors.twoFactorCode);
  function submit(event: FormEvent) {
    event.preventDefault();
    setCodeAsked(askCode);
    void login.execute();
  }
  return (
    <Page title="Log in">
      <form className="card narrow" onSubmit={submit} noValidate>
        {/* A success note of the step before never stays beside a failure of this one. */}
        {search.get('registered') && !login.error ? (
          <p className="alert success" role="status">
            Your account is ready. Log in with your password.
          </p>
        ) : null}
        {search.get('invited') && !login.error ? (
          <p className="alert success" role="status">
            Invitation accepted. Log in to see your provider in your profile.
          </p>
        ) : null}
        {search.get('reset') && !login.error ? (
          <p className="alert success" role="status">
            Your password is changed and every session was ended. Log in with the new password.
          </p>
        ) : null}
        <ErrorMessage error={login.error} fields={['email', 'password', 'twoFactorCode']} />
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          value={email}
          onChange={setEmail}
          error={login.error}
          required
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={setPassword}
          error={login.error}
          required
        />
        {askCode ? (
          <TwoFactorCodeField
            label="Authentication code"
            name="twoFactorCode"
            recovery
            value={twoFactorCode}
            onChange={setTwoFactorCode}
            error={login.error}
            hint="The 6-digit code of your authenticator app, or a recovery code."
          />
        ) : null}
        <Button type="submit" kind="primary" pending={login.pending}>
          Log in
        </Button>
        <p className="links">
          <Link to="/forgot-password">Forgot your password?</Link> ·{' '}
          <Link to="/signup">Create an account</Link>
        </p>
      </form>
    </Page>
  );
}

export function SignUpScreen() {
  const [email, setEmail] = useState('');
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [codeSent, setCodeSent] = useState(false);
  const sendCode = useAction(async () => {
    await unwrap(client.POST('/api/v1/auth/register/code', { body: { email } }));
    setCodeSent(true);
  });
  const register = useAction(async () => {
    await unwrap(
      client.POST('/api/v1/auth/register', {
        body: { email, code, password, ...(displayName.trim() ? { displayName: displayName.trim() } : {}) },
      }),
    );
    registeredEmail = email;
    navigate('/login?registered=1');
  });
  return (
    <Page title="Create an account">
      <form
        className="card narrow"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void (codeSent ? register.execute() : sendCode.execute());
        }}
      >
        <ErrorMessage error={sendCode.error} fields={['email']} />
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          value={email}
          onChange={setEmail}
          error={sendCode.error ?? register.error}
          required
        />
        {codeSent ? (
          <>
            {register.error ? null : (
              <p className="alert success" role="status">
                We sent a 6-digit code to {email}. Enter it below with the password you want.
              </p>
            )}
            <ErrorMessage error={register.error} fields={['email', 'code', 'password', 'displayName']} />
            <Field
              label="Code from the email"
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              value={code}
              onChange={setCode}
              error={register.error}
              required
            />
            <Field
              label="Password"
              name="password"
              type="password"
              autoComplete="new-password"
              value={password}
              onChange={setPassword}
              error={register.error}
              hint="At least 8 characters."
              required
            />
            <Field
              label="Name (optional)"
              name="displayName"
              autoComplete="name"
              value={displayName}
              onChange={setDisplayName}
              error={register.error}
            />
            <div className="row">
              <Button type="submit" kind="primary" pending={register.pending}>
                Create account
              </Button>
              <Button onClick={() => void sendCode.execute()} pending={sendCode.pending}>
                Send a new code
              </Button>
            </div>
          </>
        ) : (
          <Button type="submit" kind="primary" pending={sendCode.pending}>
            Email me a code
          </Button>
        )}
        <p className="links">
          Already have an account? <Link to="/login">Log in</Link>
        </p>
      </form>
    </Page>
  );
}

export function ForgotPasswordScreen() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(false);
  const forgot = useAction(async () => {
    await unwrap(client.POST('/api/v1/auth/forgot-password', { body: { email } }));
    setSent(true);
  });
  return (
    <Page title="Reset your password">
      <form
        className="card narrow"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void forgot.execute();
        }}
      >
        {sent ? (
          <p className="alert success" role="status">
            If an account uses {email}, we sent it a reset token. Open the link in the email, or{' '}
            <Link to="/reset-password">enter the token here</Link>.
          </p>
        ) : null}
        <ErrorMessage error={forgot.error} fields={['email']} />
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          value={email}
          onChange={setEmail}
          error={forgot.error}
          required
        />
        <Button type="submit" kind="primary" pending={forgot.pending}>
          Send reset token
        </Button>
      </form>
    </Page>
  );
}

export function ResetPasswordScreen() {
  // The emailed link carries the token in the fragment, which never reaches a server or a log.
  const [token, setToken] = useState(() => new URLSearchParams(location.hash.slice(1)).get('token') ?? '');
  const [password, setPassword] = useState('');
  const reset = useAction(async () => {
    await unwrap(client.POST('/api/v1/auth/reset-password', { body: { token, password } }));
    history.replaceState(null, '', '/reset-password');
    navigate('/login?reset=1');
  });
  return (
    <Page title="Choose a new password">
      <form
        className="card narrow"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void reset.execute();
        }}
      >
        <ErrorMessage error={reset.error} fields={['token', 'password']} />
        <Field
          label="Reset token"
          name="token"
          value={token}
          onChange={setToken}
          error={reset.error}
          autoComplete="off"
          required
        />
        <Field
          label="New password"
          name="password"
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={setPassword}
          error={reset.error}
          hint="At least 8 characters. Every session is ended."
          required
        />
        <Button type="submit" kind="primary" pending={reset.pending}>
          Set password
        </Button>
      </form>
    </Page>
  );
}

export function AcceptInvitationScreen() {
  // The emailed link carries the token (and whether an account is to be made) in the fragment,
  // which never reaches a server or a log.
  const [fragment] = useState(() => new URLSearchParams(location.hash.slice(1)));
  const [token, setToken] = useState(fragment.get('token') ?? '');
  const [password, setPassword] = useState('');
  const newAccount = fragment.get('new') === '1';
  const { account } = useSession();
  const accept = useAction(async () => {
    await unwrap(
      client.POST('/api/v1/auth/accept-invitation', { body: newAccount ? { token, password } : { token } }),
    );
    history.replaceState(null, '', '/accept-invitation');
    // Signed in already: the profile shows the provider; otherwise log in first.
    navigate(account ? '/profile' : '/login?invited=1');
  });
  return (
    <Page title="Accept an invitation">
      <form
        className="card narrow"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void accept.execute();
        }}
      >
        <p>
          The provider who invited you will be able to create and manage API keys that spend your account's
          balance, grant you credit and read your usage. You can end this in your profile at any time.
        </p>
        <ErrorMessage error={accept.error} fields={['token', 'password']} />
        <Field
          label="Invitation token"
          name="token"
          value={token}
          onChange={setToken}
          error={accept.error}
          autoComplete="off"
          required
        />
        {newAccount ? (
          <Field
            label="Choose a password"
            name="password"
            type="password"
            autoComplete="new-password"
            value={password}
            onChange={setPassword}
            error={accept.error}
            hint="At least 8 characters."
            required
          />
        ) : null}
        <Button type="submit" kind="primary" pending={accept.pending}>
          Accept invitation
        </Button>
      </form>
    </Page>
  );
}
