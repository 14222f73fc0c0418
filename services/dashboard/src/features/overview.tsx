import { daysBetween, UsageChart } from '../lib/chart.tsx';
import type { Schemas } from '../lib/client.ts';
import { CreditMoney } from '../lib/credit.tsx';
import { formatDate, groupDigits, utcDay } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { useSession } from '../lib/session.tsx';
import { Card, Empty, ErrorMessage, Loading, Page } from '../lib/ui.tsx';
import { ActivityTable } from './activity.tsx';
import { usePackageNames } from './package-names.ts';
import { AccountSpendCaps } from './spend-caps.tsx';

type Balance = Schemas['Balance'];

/**
 * The first steps of a new account, shown until it has made a call: something to pay with, a key,
 * a first call. Each step says whether it is done.
 */
function GettingStarted(props: { balance: Balance | undefined; hasEntitlement: boolean }) {
  const keys = useRead('/api/v1/me/api-keys');
  const calls = useRead('/api/v1/me/activity', { params: { query: { limit: 1 } } });
  if (!props.balance || !keys.data || !calls.data || calls.data.items.length > 0) return null;
  const funded =
    props.hasEntitlement || props.balance.remaining.credits !== '0' || props.balance.remaining.tokens !== '0';
  const steps = [
    { done: funded, text: 'Buy a token package or credit', to: '/buy', link: 'Buy' },
    { done: keys.data.length > 0, text: 'Create an API key', to: '/keys', link: 'API keys' },
    { done: false, text: 'Make your first call with the key', to: '/use-key', link: 'Use a key' },
  ];
  return (
    <Card title="Get started">
      <ol className="getting-started" data-testid="getting-started">
        {steps.map((step) => (
          <li key={step.to} className={step.done ? 'done' : undefined}>
            {step.text}: {step.done ? <strong>done</strong> : <Link to={step.to}>{step.link}</Link>}
          </li>
        ))}
      </ol>
    </Card>
  );
}

export function OverviewScreen() {
  const { account } = useSession();
  const balance = useRead('/api/v1/me/balance');
  const entitlements = useRead('/api/v1/me/entitlements');
  const packageName = usePackageNames();
  const from = utcDay(13);
  const to = utcDay(0);
  const usage = useRead('/api/v1/me/usage/summary', { params: { query: { from, to } } });
  return (
    <Page title={`Welcome${account?.displayName ? `, ${account.displayName}` : ''}`}>
      <GettingStarted
        balance={balance.data}
        hasEntitlement={entitlements.data?.some((entitlement) => !entitlement.expired) ?? false}
      />
      <div className="grid">
        <Card title="Balance">
          <ErrorMessage error={balance.error} />
          {balance.data ? (
            <dl className="stats">
              <div>
                <dt>Tokens left</dt>
                <dd data-testid="tokens-left">{groupDigits(balance.data.remaining.tokens)}</dd>
              </div>
              <div>
                <dt>Credit</dt>
                <dd data-testid="credits-left">{groupDigits(balance.data.remaining.credits)}</dd>
                <dd>
                  <CreditMoney credits={balance.data.remaining.credits} testId="credit-money" />{' '}
                  <Link to="/buy#top-up">Top up</Link>
                </dd>
              </div>
              <div>
                <dt>Held by calls in flight</dt>
                <dd>
                  {groupDigits(balance.data.reserved.tokens)} tokens,{' '}
                  {groupDigits(balance.data.reserved.credits)} credits{' '}
                  <CreditMoney credits={balance.data.reserved.credits} />
                </dd>
              </div>
            </dl>
          ) : (
            <Loading />
          )}
        </Card>
        <Card title="Entitlements">
          <ErrorMessage error={entitlements.error} />
          {entitlements.data && entitlements.data.length === 0 ? (
            <Empty title="No token packages yet">
              Look at the <Link to="/models">packages on offer</Link>; the operator can also grant credit.
            </Empty>
          ) : null}
          <ul className="entitlements">
            {entitlements.data?.map((entitlement) => (
              <li key={entitlement.id}>
                <strong>{packageName(entitlement.packageId) ?? 'Grant'}</strong>:{' '}
                {groupDigits(entitlement.remaining)} of {groupDigits(entitlement.granted)} tokens left
                <meter
                  min={0}
                  max={Number(entitlement.granted)}
                  value={Number(entitlement.remaining)}
                  aria-label="Share left"
                />
                <span className="muted">
                  {entitlement.expired ? 'expired ' : 'expires '}
                  {entitlement.expiresAt ? formatDate(entitlement.expiresAt) : 'never'}
                  {entitlement.aliases ? ` · ${entitlement.aliases.join(', ')}` : ' · every model'}
                </span>
              </li>
            ))}
          </ul>
        </Card>
      </div>
      <Card title="Spend caps">
        <AccountSpendCaps />
        <p className="muted">
          At most so much per 5 hours, day, week or month; a call over a cap is refused until it frees.
        </p>
      </Card>
      <Card title="Tokens per day, last 14 days">
        <ErrorMessage error={usage.error} />
        {usage.data ? <UsageChart rows={usage.data} days={daysBetween(from, to)} /> : <Loading />}
        <p>
          <Link to="/usage">Usage details and CSV export</Link>
        </p>
      </Card>
      <Card title="Recent activity">
        <ActivityTable limit={10} caption="Recent calls" />
      </Card>
    </Page>
  );
}
