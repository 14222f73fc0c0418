import { useQuery } from '@tanstack/react-query';
import { Fragment, useState } from 'react';
import { ApiError } from '../lib/api.ts';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate, formatMoney, groupDigits } from '../lib/format.ts';
import { useAction, useFormKey, usePagedRead } from '../lib/query.ts';
import {
  Button,
  Card,
  Confirm,
  Empty,
  ErrorMessage,
  Field,
  ListTable,
  Loading,
  MoreButton,
  Page,
  StateBadge,
} from '../lib/ui.tsx';
import type { Order } from './orders-types.ts';
import { usePackageNames } from './package-names.ts';

type OrderAction = 'payment/confirm' | 'payment/reject' | 'refund';

/** An account's email, for naming it in a confirmation (its id until it is read). */
function AccountName(props: { id: string }) {
  // One request per account, however many orders name it (the query cache shares it).
  const account = useQuery({
    queryKey: ['/api/v1/admin/accounts/{id}', props.id],
    queryFn: () => unwrap(client.GET('/api/v1/admin/accounts/{id}', { params: { path: { id: props.id } } })),
  });
  return <strong>{account.data?.email ?? props.id}</strong>;
}

const ORDER_STATUSES = ['pending', 'paid', 'expired', 'cancelled', 'failed', 'refunded'] as const;
const PAYMENT_PROVIDERS = ['stripe', 'manual', 'development'] as const;
type OrderStatus = (typeof ORDER_STATUSES)[number];
type PaymentProvider = (typeof PAYMENT_PROVIDERS)[number];
const ORDER_COLUMNS = ['Date', 'Reference', 'Customer', 'Package', 'Price', 'Provider', 'Status', 'Actions'];

/** Paid orders' money per UTC day of payment and currency, newest day first. */
function revenuePerDay(orders: Order[]): { day: string; currency: string; total: string; orders: number }[] {
  const sums = new Map<
    string,
    { day: string; currency: string; exponent: number; total: bigint; orders: number }
  >();
  for (const order of orders) {
    if (order.status !== 'paid' || !order.paidAt) continue;
    const day = order.paidAt.slice(0, 10);
    const key = `${day} ${order.price.currency}`;
    const sum = sums.get(key) ?? {
      day,
      currency: order.price.currency,
      exponent: order.price.exponent,
      total: 0n,
      orders: 0,
    };
    sum.total += BigInt(order.price.amount);
    sum.orders += 1;
    sums.set(key, sum);
  }
  return [...sums.values()]
    .sort((a, b) => b.day.localeCompare(a.day) || a.currency.localeCompare(b.currency))
    .map((sum) => ({
      day: sum.day,
      currency: sum.currency,
      orders: sum.orders,
      total: formatMoney({ amount: String(sum.total), currency: sum.currency, exponent: sum.exponent }),
    }));
}

function OrderDetails(props: { order: Order }) {
  const { order } = props;
  return (
    <dl className="receipt" data-testid="order-details">
      <dt>List price</dt>
      <dd>{formatMoney(order.listPrice)}</dd>
      <dt>Discount</dt>
      <dd>
        {formatMoney(order.discount)}
        {order.promotionCode ? ` (promotion ${order.promotionCode})` : ''}
      </dd>
      <dt>Grants</dt>
      <dd>
        {groupDigits(order.grants.tokens)} tokens
        {order.grants.bonusTokens !== '0' ? `, ${groupDigits(order.grants.bonusTokens)} bonus tokens` : ''}
        {order.grants.bonusCredits !== '0' ? `, ${groupDigits(order.grants.bonusCredits)} bonus credits` : ''}
      </dd>
      <dt>Payment</dt>
      <dd>
        {order.payment
          ? `${order.payment.provider} ${order.payment.status}, reference ${order.payment.reference}${order.payment.failureReason ? ` (${order.payment.failureReason})` : ''}`
          : 'not started'}
      </dd>
      <dt>Paid</dt>
      <dd>{formatDate(order.paidAt)}</dd>
      <dt>Closed</dt>
      <dd>{formatDate(order.closedAt)}</dd>
      {order.refunded ? (
        <>
          <dt>Taken back at the refund</dt>
          <dd>
            {groupDigits(order.refunded.tokens)} tokens, {groupDigits(order.refunded.credits)} credits
          </dd>
        </>
      ) : null}
    </dl>
  );
}

const ACTION_WORDS: Record<OrderAction, { title: string; confirm: string; done: string }> = {
  'payment/confirm': { title: 'Confirm the payment of', confirm: 'Confirm payment', done: 'paid' },
  'payment/reject': { title: 'Reject the payment of', confirm: 'Reject payment', done: 'rejected' },
  refund: { title: 'Refund', confirm: 'Refund', done: 'refunded' },
};

/**
 * Orders of every account: confirm or reject manual payments, refund paid orders. Each action is
 * confirmed in a dialog naming the amount and the account; a refund needs a reason (kept in the
 * audit log) and carries one idempotency key per dialog, so sending it twice refunds once.
 */
export function AdminOrdersScreen() {
  const [filters, setFilters] = useState<{ status?: OrderStatus; provider?: PaymentProvider }>({});
  const orders = usePagedRead('/api/v1/admin/orders', { limit: 50, ...filters });
  const [opened, setOpened] = useState<string | null>(null);
  const packageName = usePackageNames({ admin: true });
  const [acting, setActing] = useState<{ order: Order; action: OrderAction } | null>(null);
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const formKey = useFormKey();
  const act = useAction(async (order: Order, action: OrderAction) => {
    setDone(null);
    const note = reason.trim();
    const params = { path: { id: order.id } };
    const body = note ? { note } : {};
    await unwrap(
      action === 'refund'
        ? client.POST('/api/v1/admin/orders/{id}/refund', {
            params,
            body: { note },
            headers: { 'idempotency-key': formKey.key },
          })
        : action === 'payment/confirm'
          ? client.POST('/api/v1/admin/orders/{id}/payment/confirm', { params, body })
          : client.POST('/api/v1/admin/orders/{id}/payment/reject', { params, body }),
    );
    setDone(`Order ${order.reference} ${ACTION_WORDS[action].done} (${formatMoney(order.price)}).`);
    setActing(null);
    await orders.reload();
  });
  const open = (order: Order, action: OrderAction) => {
    setDone(null);
    act.clearError();
    setReason('');
    setReasonError(null);
    formKey.renew();
    setActing({ order, action });
  };
  const items = orders.data?.items ?? [];
  return (
    <Page title="Orders and payments">
      <ErrorMessage error={orders.error} />
      {done ? (
        <p className="alert success" role="status">
          {done}
        </p>
      ) : null}
      <form
        className="row wrap align-end"
        aria-label="Filter orders"
        onSubmit={(event) => event.preventDefault()}
      >
        <Field label="Status" name="status">
          {(id) => (
            <select
              id={id}
              value={filters.status ?? ''}
              onChange={(e) =>
                setFilters({ ...filters, status: (e.target.value || undefined) as OrderStatus })
              }
            >
              <option value="">any</option>
              {ORDER_STATUSES.map((status) => (
                <option key={status}>{status}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Payment provider" name="provider">
          {(id) => (
            <select
              id={id}
              value={filters.provider ?? ''}
              onChange={(e) =>
                setFilters({ ...filters, provider: (e.target.value || undefined) as PaymentProvider })
              }
            >
              <option value="">any</option>
              {PAYMENT_PROVIDERS.map((provider) => (
                <option key={provider}>{provider}</option>
              ))}
            </select>
          )}
        </Field>
      </form>
      {orders.loading && !orders.data ? <Loading /> : null}
      {orders.data && items.length === 0 ? (
        <Empty title="No orders">Orders appear here once customers buy (or none matches the filters).</Empty>
      ) : null}
      {revenuePerDay(items).length > 0 ? (
        <Card title="Revenue per day (paid orders listed below)">
          <ul data-testid="revenue-per-day">
            {revenuePerDay(items).map((row) => (
              <li key={`${row.day} ${row.currency}`}>
                {row.day}: {row.total} from {row.orders} order{row.orders === 1 ? '' : 's'}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <ListTable
            label="Orders"
            caption="Every order, newest first"
            testId="admin-orders"
            columns={ORDER_COLUMNS}
            list={orders}
          >
            {items.map((order) => (
              <Fragment key={order.id}>
                <tr>
                  <td>{formatDate(order.createdAt)}</td>
                  <td>{order.reference}</td>
                  <td>
                    <AccountName id={order.accountId} />
                  </td>
                  <td>{order.kind === 'top_up' ? 'Credit top-up' : packageName(order.packageId)}</td>
                  <td>{formatMoney(order.price)}</td>
                  <td>{order.provider}</td>
                  <td>
                    <StateBadge state={order.status} />
                  </td>
                  <td className="row">
                    {order.status === 'pending' && order.provider === 'manual' ? (
                      <>
                        <Button
                          onClick={() => open(order, 'payment/confirm')}
                          label={`Confirm payment of ${order.reference}`}
                        >
                          Confirm
                        </Button>
                        <Button
                          onClick={() => open(order, 'payment/reject')}
                          label={`Reject payment of ${order.reference}`}
                        >
                          Reject
                        </Button>
                      </>
                    ) : null}
                    {order.status === 'paid' ? (
                      <Button
                        kind="danger"
                        onClick={() => open(order, 'refund')}
                        label={`Refund ${order.reference}`}
                      >
                        Refund
                      </Button>
                    ) : null}
                    <Button
                      onClick={() => setOpened(opened === order.id ? null : order.id)}
                      label={`${opened === order.id ? 'Hide' : 'Show'} the details of ${order.reference}`}
                    >
                      {opened === order.id ? 'Hide' : 'Details'}
                    </Button>
                  </td>
                </tr>
                {opened === order.id ? (
                  <tr>
                    <td colSpan={ORDER_COLUMNS.length}>
                      <OrderDetails order={order} />
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </ListTable>
        </Card>
      ) : null}
      {acting ? (
        <Confirm
          title={`${ACTION_WORDS[acting.action].title} ${formatMoney(acting.order.price)} (order ${acting.order.reference})?`}
          confirmLabel={ACTION_WORDS[acting.action].confirm}
          pending={act.pending}
          error={reasonError ? null : act.error}
          onConfirm={() => {
            if (acting.action === 'refund' && !reason.trim()) {
              setReasonError(
                new ApiError(
                  422,
                  'validation_failed',
                  'Say why.',
                  { note: ['Say why the order is refunded.'] },
                  null,
                ),
              );
              return;
            }
            setReasonError(null);
            void act.execute(acting.order, acting.action);
          }}
          onCancel={() => setActing(null)}
        >
          <p>
            Account <AccountName id={acting.order.accountId} />, package {packageName(acting.order.packageId)}
            .
          </p>
          {acting.action === 'refund' ? (
            <p>
              {formatMoney(acting.order.price)} goes back through {acting.order.provider}, and what the order
              granted and is still unused is taken back.
            </p>
          ) : null}
          <Field
            label={acting.action === 'refund' ? 'Reason (required)' : 'Note (optional)'}
            name="note"
            value={reason}
            onChange={(value) => {
              setReason(value);
              setReasonError(null);
            }}
            error={reasonError ?? act.error}
            hint="Kept in the audit log."
          />
        </Confirm>
      ) : null}
    </Page>
  );
}

type Promotion = Schemas['Promotion'];
type PromotionKind = Schemas['CreatePromotionRequest']['kind'];

export function AdminPromotionsScreen() {
  const promotions = usePagedRead('/api/v1/admin/promotions', { limit: 50 });
  const [form, setForm] = useState<{ code: string; kind: PromotionKind; value: string; packageIds: string }>({
    code: '',
    kind: 'percent_off',
    value: '',
    packageIds: '',
  });
  const create = useAction(async () => {
    const value = form.value.trim();
    const packageIds = form.packageIds
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    await unwrap(
      client.POST('/api/v1/admin/promotions', {
        body: {
          // Empty: the server makes a random code that cannot be guessed.
          ...(form.code.trim() ? { code: form.code.trim() } : {}),
          kind: form.kind,
          ...(form.kind === 'percent_off' ? { percentOff: Number(value) } : { bonus: value }),
          ...(packageIds.length > 0 ? { packageIds } : {}),
        },
      }),
    );
    setForm({ code: '', kind: form.kind, value: '', packageIds: '' });
    await promotions.reload();
  });
  const toggle = useAction(async (promotion: Promotion) => {
    await unwrap(
      client.PATCH('/api/v1/admin/promotions/{id}', {
        params: { path: { id: promotion.id } },
        body: { active: !promotion.active },
      }),
    );
    await promotions.reload();
  });
  return (
    <Page title="Promotions">
      <form
        className="card"
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void create.execute();
        }}
      >
        <h2>New promotion</h2>
        <ErrorMessage error={create.error} fields={['code', 'percentOff', 'bonus', 'packageIds']} />
        <div className="grid">
          <Field
            label="Code (empty: a random one)"
            name="code"
            value={form.code}
            onChange={(code) => setForm({ ...form, code })}
            error={create.error}
          />
          <div className="field">
            <label htmlFor="promotion-kind">Kind</label>
            <select
              id="promotion-kind"
              value={form.kind}
              onChange={(event) => setForm({ ...form, kind: event.target.value as PromotionKind })}
            >
              <option value="percent_off">Percent off</option>
              <option value="bonus_tokens">Bonus tokens</option>
              <option value="bonus_credit">Bonus credit</option>
            </select>
          </div>
          <Field
            label={form.kind === 'percent_off' ? 'Percent off' : 'Bonus amount'}
            name={form.kind === 'percent_off' ? 'percentOff' : 'bonus'}
            inputMode="numeric"
            value={form.value}
            onChange={(value) => setForm({ ...form, value })}
            error={create.error}
          />
          <Field
            label="Packages (comma list; empty: all)"
            name="packageIds"
            value={form.packageIds}
            onChange={(packageIds) => setForm({ ...form, packageIds })}
            error={create.error}
          />
        </div>
        <Button type="submit" kind="primary" pending={create.pending}>
          Create promotion
        </Button>
      </form>
      <ErrorMessage error={promotions.error ?? toggle.error} />
      {promotions.data && promotions.data.items.length === 0 ? (
        <Empty title="No promotions">Create a code above; customers preview it before they buy.</Empty>
      ) : null}
      <Card>
        <ul className="sessions" data-testid="promotions">
          {promotions.data?.items.map((promotion) => (
            <li key={promotion.id}>
              <div>
                <strong>{promotion.code}</strong>{' '}
                <StateBadge state={promotion.active ? 'active' : 'disabled'} />
                <p className="muted">
                  {promotion.kind === 'percent_off'
                    ? `${promotion.percentOff}% off`
                    : `${promotion.kind} ${promotion.bonus}`}{' '}
                  · {promotion.packageIds ? promotion.packageIds.join(', ') : 'every package'} ·{' '}
                  {promotion.redemptionsTaken} taken
                  {promotion.totalLimit ? ` of ${promotion.totalLimit}` : ''}
                </p>
              </div>
              <Button
                onClick={() => void toggle.execute(promotion)}
                label={`${promotion.active ? 'Deactivate' : 'Activate'} ${promotion.code}`}
              >
                {promotion.active ? 'Deactivate' : 'Activate'}
              </Button>
            </li>
          ))}
        </ul>
        <MoreButton list={promotions} />
      </Card>
    </Page>
  );
}
