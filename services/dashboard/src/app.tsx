import { QueryClientProvider } from '@tanstack/react-query';
import { type JSX, useEffect, useState } from 'react';
import { AdminAccountScreen, AdminAccountsScreen } from './features/admin-accounts.tsx';
import { AdminCatalogScreen } from './features/admin-catalog.tsx';
import { AdminOrdersScreen, AdminPromotionsScreen } from './features/admin-commerce.tsx';
import { AdminOperationsScreen } from './features/admin-ops.tsx';
import { AdminUsageScreen } from './features/admin-usage.tsx';
import {
  AcceptInvitationScreen,
  ForgotPasswordScreen,
  LoginScreen,
  ResetPasswordScreen,
  SignUpScreen,
} from './features/auth.tsx';
import { BuyScreen } from './features/buy.tsx';
import { CatalogScreen } from './features/catalog.tsx';
import { KeysScreen } from './features/keys.tsx';
import { ManagementKeysScreen } from './features/management-keys.tsx';
import { OrderScreen, OrdersScreen } from './features/orders.tsx';
import { OverviewScreen } from './features/overview.tsx';
import { ProfileScreen } from './features/profile.tsx';
import { RequestLogScreen } from './features/request-log.tsx';
import { ResellerCustomerScreen, ResellerCustomersScreen } from './features/reseller.tsx';
import { SessionsScreen } from './features/sessions.tsx';
import { StatusScreen } from './features/status.tsx';
import { UsageScreen } from './features/usage.tsx';
import { UseKeyScreen } from './features/use-key.tsx';
import { Shell } from './layout.tsx';
import { refusedArea } from './lib/areas.ts';
import { createQueryClient } from './lib/query-client.ts';
import { navigate, useLocation } from './lib/router.tsx';
import { SessionProvider, useSession } from './lib/session.tsx';
import { Loading } from './lib/ui.tsx';

const PUBLIC: Record<string, () => JSX.Element> = {
  '/login': LoginScreen,
  '/signup': SignUpScreen,
  '/forgot-password': ForgotPasswordScreen,
  '/reset-password': ResetPasswordScreen,
  '/accept-invitation': AcceptInvitationScreen,
  '/models': CatalogScreen,
  '/status': StatusScreen,
};

const PRIVATE: Record<string, () => JSX.Element> = {
  '/': OverviewScreen,
  '/keys': KeysScreen,
  '/usage': UsageScreen,
  '/requests': RequestLogScreen,
  '/use-key': UseKeyScreen,
  '/sessions': SessionsScreen,
  '/profile': ProfileScreen,
  '/buy': BuyScreen,
  '/orders': OrdersScreen,
  '/reseller': ResellerCustomersScreen,
  '/reseller/keys': ManagementKeysScreen,
  '/admin': AdminAccountsScreen,
  '/admin/orders': AdminOrdersScreen,
  '/admin/usage': AdminUsageScreen,
  '/admin/promotions': AdminPromotionsScreen,
  '/admin/operations': AdminOperationsScreen,
  '/admin/catalog': AdminCatalogScreen,
};

/** Screens of one record: the id is the last path segment. */
const RECORDS: [string, (props: { id: string }) => JSX.Element][] = [
  ['/orders/', OrderScreen],
  ['/reseller/customers/', ResellerCustomerScreen],
  ['/admin/accounts/', AdminAccountScreen],
];

function privateElement(path: string): JSX.Element | null {
  const Screen = PRIVATE[path];
  if (Screen) return <Screen />;
  for (const [prefix, Record] of RECORDS) {
    const id = path.startsWith(prefix) ? path.slice(prefix.length) : '';
    if (/^[0-9a-f-]{36}$/.test(id)) return <Record key={id} id={id} />;
  }
  return null;
}

export function App() {
  const [queryClient] = useState(createQueryClient);
  return (
    <QueryClientProvider client={queryClient}>
      <SessionProvider>
        <Router />
      </SessionProvider>
    </QueryClientProvider>
  );
}

function Router() {
  const { path } = useLocation();
  const { account } = useSession();
  const PublicScreen = PUBLIC[path];
  const element = PublicScreen ? null : privateElement(path);
  const needsLogin = !PublicScreen && account === null;
  const known = element !== null;

  useEffect(() => {
    if (needsLogin) {
      navigate(`/login${path !== '/' && known ? `?next=${encodeURIComponent(path)}` : ''}`, {
        replace: true,
      });
    }
    // Move focus to the new screen's heading so keyboard and screen-reader users land on it.
    document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true });
  }, [needsLogin, path, known]);

  if (PublicScreen) {
    return (
      <Shell signedIn={Boolean(account)}>
        <PublicScreen />
      </Shell>
    );
  }
  if (account === undefined || account === null) {
    return (
      <Shell signedIn={false}>
        <Loading />
      </Shell>
    );
  }
  const refusedTo = element ? refusedArea(path, account) : null;
  return <Shell signedIn>{refusedTo ? <NotAllowed who={refusedTo} /> : (element ?? <NotFound />)}</Shell>;
}

function NotAllowed(props: { who: string }) {
  return (
    <section className="page">
      <h1 tabIndex={-1}>Not available to this account</h1>
      <p>
        This page is for {props.who} only. <a href="/">Go to the overview</a>.
      </p>
    </section>
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
