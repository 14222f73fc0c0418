import { useEffect } from 'react';
import { ForgotPasswordScreen, LoginScreen, ResetPasswordScreen, SignUpScreen } from './features/auth.tsx';
import { CatalogScreen } from './features/catalog.tsx';
import { KeysScreen } from './features/keys.tsx';
import { OverviewScreen } from './features/overview.tsx';
import { ProfileScreen } from './features/profile.tsx';
import { SessionsScreen } from './features/sessions.tsx';
import { StatusScreen } from './features/status.tsx';
import { UsageScreen } from './features/usage.tsx';
import { UseKeyScreen } from './features/use-key.tsx';
import { Shell } from './layout.tsx';
import { navigate, useLocation } from './lib/router.tsx';
import { SessionProvider, useSession } from './lib/session.tsx';
import { Loading } from './lib/ui.tsx';

const PUBLIC = {
  '/login': LoginScreen,
  '/signup': SignUpScreen,
  '/forgot-password': ForgotPasswordScreen,
  '/reset-password': ResetPasswordScreen,
  '/models': CatalogScreen,
  '/status': StatusScreen,
} as const;

const PRIVATE = {
  '/': OverviewScreen,
  '/keys': KeysScreen,
  '/usage': UsageScreen,
  '/use-key': UseKeyScreen,
  '/sessions': SessionsScreen,
  '/profile': ProfileScreen,
} as const;

export function App() {
  return (
    <SessionProvider>
      <Router />
    </SessionProvider>
  );
}

function Router() {
  const { path } = useLocation();
  const { account } = useSession();
  const publicScreen = PUBLIC[path as keyof typeof PUBLIC] as
    | (typeof PUBLIC)[keyof typeof PUBLIC]
    | undefined;
  const privateScreen = PRIVATE[path as keyof typeof PRIVATE] as
    | (typeof PRIVATE)[keyof typeof PRIVATE]
    | undefined;
  const needsLogin = !publicScreen && account === null;

  useEffect(() => {
    if (needsLogin)
      navigate(`/login${path !== '/' && privateScreen ? `?next=${encodeURIComponent(path)}` : ''}`, {
        replace: true,
      });
    // Move focus to the new screen's heading so keyboard and screen-reader users land on it.
    document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true });
  }, [needsLogin, path, privateScreen]);

  if (publicScreen) {
    const Screen = publicScreen;
    return (
      <Shell signedIn={Boolean(account)}>
        <Screen />
      </Shell>
    );
  }
  if (account === undefined || needsLogin) {
    return (
      <Shell signedIn={false}>
        <Loading />
      </Shell>
    );
  }
  const Screen = privateScreen ?? NotFound;
  return (
    <Shell signedIn>
      <Screen />
    </Shell>
  );
}

function NotFound() {
  return (
    <section className="page">
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        There is nothing at this address. <a href="/">Go to the overview</a>.
      </p>
    </section>
  );
}
