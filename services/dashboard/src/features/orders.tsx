import { useEffect, useRef } from 'react';
import { client, unwrap } from '../lib/client.ts';
import { CreditMoney } from '../lib/credit.tsx';
import { formatDate, formatMoney, groupDigits } from '../lib/format.ts';
import { useAction, usePagedRead, useRead } from '../lib/query.ts';
import { Link, useLocation } from '../lib/router.tsx';
import { useSession } from '../lib/session.tsx';
import { Button, Card, Empty, ErrorMessage, ListTable, Loading, Page, StateBadge } from '../lib/ui.tsx';
import type { Order } from './orders-types.ts';
import { usePackageNames } from './package-names.ts';

export function OrdersScreen() {
  const orders = usePagedRead('/api/v1/orders', { limit: 50 });
  const packageName = usePackageNames();
  const items = orders.data?.items ?? [];
  return (
    <Page title="Orders" actions={<Link to="/buy">Buy tokens</Link>}>
      <ErrorMessage error={orders.error} />
      {orders.loading && !orders.data ? <Loading /> : null}
      {orders.data && items.length === 0 ? (
        <Empty title="No orders yet">
          <Link to="/buy">Buy a token package</Link> to get started.
        </Empty>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <ListTable
            label="Orders"
            caption="Your orders, newest first"
            testId="orders"
            columns={['Date', 'Bought', 'Price', 'Status', 'Reference']}
            list={orders}
          >
            {items.map((order) => (
              <tr key={order.id}>
                <td>{formatDate(order.createdAt)}</td>
                <td>{orderLabel(order, packageName)}</td>
                <td>{formatMoney(order.price)}</td>
                <td>
                  <StateBadge state={order.status} />
                </td>
                <td>
                  <Link to={`/orders/${order.id}`}>
                    {order.status === 'paid' || order.status === 'refunded' ? 'Receipt' : 'Details'}{' '}
                    <span className="sr-only">of order </span>
                    {order.reference}
                  </Link>
                </td>
              </tr>
            ))}
          </ListTable>
        </Card>
      ) : null}
    </Page>
  );
}

/** One order: pay it (and retry a failed payment), follow its status, read its receipt. */
export function OrderScreen(props: { id: string }) {
  const { search } = useLocation();
  const path = { id: props.id };
  const order = useRead('/api/v1/orders/{id}', { params: { path } });
  const packageName = usePackageNames();
  const { account } = useSession();
  const pay = useAction(async () => {
    const started = await unwrap(client.POST('/api/v1/orders/{id}/payment', { params: { path } }));
    if (started.payment?.nextStep === 'redirect' && started.payment.redirectUrl) {
      location.assign(started.payment.redirectUrl);
      return;
    }
    await order.reload();
  });
  const verify = useAction(async () => {
    await unwrap(client.POST('/api/v1/orders/{id}/payment/verify', { params: { path } }));
    await order.reload();
  });
  const cancel = useAction(async () => {
    await unwrap(client.POST('/api/v1/orders/{id}/cancel', { params: { path } }));
    await order.reload();
  });
  const data = order.data;
  const payment = data?.payment ?? null;
  // Back from the provider's checkout: ask once whether the payment went through.
  const checkedReturn = useRef(false);
  const returned =
    search.get('payment') === 'done' && data?.status === 'pending' && payment?.status === 'pending';
  const { execute: verifyNow } = verify;
  useEffect(() => {
    if (!returned || checkedReturn.current) return;
    checkedReturn.current = true;
    void verifyNow();
  }, [returned, verifyNow]);
  const error = pay.error ?? verify.error ?? cancel.error;

  return (
    <Page
      title={data?.status === 'paid' || data?.status === 'refunded' ? 'Receipt' : 'Order'}
      actions={<Link to="/orders">All orders</Link>}
    >
      <ErrorMessage error={order.error} />
      {order.loading && !data ? <Loading /> : null}
      {search.get('payment') === 'cancelled' && data?.status === 'pending' ? (
        <p className="alert warning" role="status">
          The payment was cancelled at the provider. You can try again.
        </p>
      ) : null}
      {data ? (
        <Card className="receipt">
          <div className="key-head">
            <h2>
              {orderLabel(data, packageName)} <span className="muted">· {data.reference}</span>
            </h2>
            <StateBadge state={data.status} />
          </div>
          <div className="parties" data-testid="receipt-parties">
            {data.receipt?.seller ? (
              <div>
                <h3>Seller</h3>
                <address>
                  {data.receipt.seller.map((line) => (
                    <span key={line}>
                      {line}
                      <br />
                    </span>
                  ))}
                </address>
              </div>
            ) : null}
            <div>
              <h3>Buyer</h3>
              <address>
                {account?.displayName ? (
                  <>
                    {account.displayName}
                    <br />
                  </>
                ) : null}
                {account?.email}
              </address>
            </div>
          </div>
          <dl className="facts" data-testid="order-facts">
            <div>
              <dt>List price</dt>
              <dd>{formatMoney(data.listPrice)}</dd>
            </div>
            <div>
              <dt>Discount{data.promotionCode ? ` (${data.promotionCode})` : ''}</dt>
              <dd>{formatMoney(data.discount)}</dd>
            </div>
            <div>
              <dt>Price</dt>
              <dd data-testid="order-price">{formatMoney(data.price)}</dd>
            </div>
            {data.kind === 'top_up' ? (
              <div>
                <dt>Credits</dt>
                <dd data-testid="order-credits">
                  {groupDigits(data.grants.credits ?? '0')}{' '}
                  <CreditMoney credits={data.grants.credits ?? '0'} precision="exact" />
                </dd>
              </div>
            ) : null}
            <div hidden={data.kind === 'top_up'}>
              <dt>Tokens</dt>
              <dd>
                {groupDigits(data.grants.tokens)}
                {data.grants.bonusTokens !== '0' ? ` (${groupDigits(data.grants.bonusTokens)} bonus)` : ''}
                {data.grants.bonusCredits !== '0'
                  ? `, ${groupDigits(data.grants.bonusCredits)} bonus credits`
                  : ''}
              </dd>
            </div>
            <div>
              <dt>Ordered</dt>
              <dd>{formatDate(data.createdAt)}</dd>
            </div>
            <div>
              <dt>{data.paidAt ? 'Paid' : 'Pay before'}</dt>
              <dd>{formatDate(data.paidAt ?? data.expiresAt)}</dd>
            </div>
            <div>
              <dt>Payment</dt>
              <dd>
                {data.provider}
                {payment ? ` · ${payment.status}` : ' · not started'}
              </dd>
            </div>
            <div>
              <dt>Tax</dt>
              <dd data-testid="receipt-tax">
                {data.receipt?.taxNote ?? 'Tax is not itemised on this receipt.'}
              </dd>
            </div>
            {data.refunded ? (
              <div>
                <dt>Refund took back</dt>
                <dd>
                  {groupDigits(data.refunded.tokens)} tokens, {groupDigits(data.refunded.credits)} credits
                </dd>
              </div>
            ) : null}
          </dl>
          <ErrorMessage error={error} />
          {payment?.status === 'failed' ? (
            <p className="alert error" role="alert">
              The payment failed{payment.failureReason ? `: ${payment.failureReason}` : ''}. You can try
              again.
            </p>
          ) : null}
          {data.status === 'pending' && payment?.nextStep === 'wait' && payment.instructions ? (
            <p className="alert warning" role="status">
              {payment.instructions} Reference: <strong>{payment.reference}</strong>.
            </p>
          ) : null}
          <div className="row wrap no-print">
            {data.status === 'pending' && (!payment || payment.status === 'failed') ? (
              <Button kind="primary" onClick={() => void pay.execute()} pending={pay.pending}>
                {payment ? 'Try again' : 'Pay now'}
              </Button>
            ) : null}
            {data.status === 'pending' &&
            payment?.status === 'pending' &&
            payment.nextStep === 'redirect' &&
            payment.redirectUrl ? (
              <Button kind="primary" onClick={() => location.assign(payment.redirectUrl ?? '')}>
                Continue to payment
              </Button>
            ) : null}
            {data.status === 'pending' && payment?.status === 'pending' && payment.nextStep !== 'wait' ? (
              <Button
                kind={payment.nextStep === 'verify' ? 'primary' : 'secondary'}
                onClick={() => void verify.execute()}
                pending={verify.pending}
              >
                {payment.provider === 'development' ? 'Complete payment' : 'Check payment'}
              </Button>
            ) : null}
            {data.status === 'pending' ? (
              <Button onClick={() => void cancel.execute()} pending={cancel.pending}>
                Cancel order
              </Button>
            ) : null}
            {data.status === 'paid' || data.status === 'refunded' ? (
              <Button onClick={() => window.print()}>Print receipt</Button>
            ) : null}
          </div>
        </Card>
      ) : null}
    </Page>
  );
}

/** What an order buys, in words: the package's name, or a (automatic) credit top-up. */
function orderLabel(order: Order, packageName: (id: string | null) => string | null | undefined): string {
  if (order.kind === 'top_up') return order.automatic ? 'Automatic credit top-up' : 'Credit top-up';
  return packageName(order.packageId) ?? order.packageId ?? '';
}
