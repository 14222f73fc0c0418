import type { ReactNode } from 'react';
import { client, unwrap } from './lib/client.ts';
import { Link, navigate } from './lib/router.tsx';
import { useSession } from './lib/session.tsx';

const CUSTOMER_LINKS = [
  ['/', 'Overview'],
  ['/keys', 'API keys'],
  ['/usage', 'Usage'],
  ['/requests', 'Request log'],
  ['/use-key', 'Use a key'],
  ['/buy', 'Buy'],
  ['/orders', 'Orders'],
  ['/sessions', 'Sessions'],
  ['/profile', 'Profile'],
] as const;

const RESELLER_LINKS = [
  ['/reseller', 'Customers'],
  ['/reseller/keys', 'Management keys'],
] as const;

const ADMIN_LINKS = [
  ['/admin', 'Accounts'],
  ['/admin/orders', 'All orders'],
  ['/admin/usage', 'Usage and spend'],
  ['/admin/promotions', 'Promotions'],
  ['/admin/catalog', 'Catalogue'],
  ['/admin/operations', 'Operations'],
] as const;

const PUBLIC_LINKS = [
  ['/models', 'Models & pricing'],
  ['/status', 'Status'],
  ['/login', 'Log in'],
  ['/signup', 'Sign up'],
] as const;

export function Shell(props: { signedIn: boolean; children: ReactNode }) {
  const { account, setAccount } = useSession();
  const links = props.signedIn ? CUSTOMER_LINKS : PUBLIC_LINKS;
  async function logOut() {
    try {
      await unwrap(client.POST('/api/v1/auth/logout'));
    } finally {
      setAccount(null);
      navigate('/login');
    }
  }
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to={props.signedIn ? '/' : '/models'} className="brand">
          Tollgate
        </Link>
        <nav aria-label="Main">
          <ul>
            {links.map(([to, label]) => (
              <li key={to}>
                <Link to={to}>{label}</Link>
              </li>
            ))}
          </ul>
          {props.signedIn && account?.isReseller ? (
            <AreaLinks label="Reseller" links={RESELLER_LINKS} />
          ) : null}
          {props.signedIn && account?.isAdmin ? <AreaLinks label="Admin" links={ADMIN_LINKS} /> : null}
        </nav>
        {props.signedIn && account ? (
          <div className="who">
            <span className="email">{account.email}</span>
            <button type="button" className="button secondary" onClick={logOut}>
              Log out
            </button>
          </div>
        ) : null}
      </header>
      <main id="main">{props.children}</main>
      <footer className="footer">
        <Link to="/status">Service status</Link> · <a href="/api/v1/openapi.json">API reference (OpenAPI)</a>
      </footer>
    </>
  );
}

function AreaLinks(props: { label: string; links: readonly (readonly [string, string])[] }) {
  return (
    <div className="area">
      <span className="area-label">{props.label}:</span>
      <ul aria-label={props.label}>
        {props.links.map(([to, label]) => (
          <li key={to}>
            <Link to={to}>{label}</Link>
          </li>
        ))}
      </ul>
    </div>
  );
}
