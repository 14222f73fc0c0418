import { useState } from 'react';
import { api } from '../lib/api.ts';
import { formatDate, formatMoney } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Button, Card, Empty, ErrorMessage, Field, Loading, Page, StateBadge } from '../lib/ui.tsx';
import type { Order } from './orders-types.ts';

/** Orders of every account: confirm or reject manual payments, refund paid orders. */
export function AdminOrdersScreen() {
  const orders = useApi<{ items: Order[] }>('/admin/orders?limit=100');
  const act = useAction(async (id: string, action: 'payment/confirm' | 'payment/reject' | 'refund') => {
    await api('POST', `/admin/orders/${id}/${action}`, {});
    await orders.reload();
  });
  const items = orders.data?.items ?? [];
  return (
    <Page title="Orders and payments">
      <ErrorMessage error={orders.error ?? act.error} />
      {orders.loading && !orders.data ? <Loading /> : null}
      {orders.data && items.length === 0 ? (
        <Empty title="No orders yet">Orders appear here once customers buy.</Empty>
      ) : null}
      {items.length > 0 ? (
        <Card>
          <div className="table-wrap">
            <table data-testid="admin-orders">
              <caption className="sr-only">Every order, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Date</th>
                  <th scope="col">Reference</th>
                  <th scope="col">Package</th>
                  <th scope="col">Price</th>
                  <th scope="col">Provider</th>
                  <th scope="col">Status</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {items.map((order) => (
                  <tr key={order.id}>
                    <td>{formatDate(order.createdAt)}</td>
                    <td>{order.reference}</td>
                    <td>{order.packageId}</td>
                    <td>{formatMoney(order.price)}</td>
                    <td>{order.provider}</td>
                    <td>
                      <StateBadge state={order.status} />
                    </td>
                    <td className="row">
                      {order.status === 'pending' && order.provider === 'manual' ? (
                        <>
                          <Button
                            onClick={() => void act.execute(order.id, 'payment/confirm')}
                            label={`Confirm payment of ${order.reference}`}
                          >
                            Confirm
                          </Button>
                          <Button
                            onClick={() => void act.execute(order.id, 'payment/reject')}
                            label={`Reject payment of ${order.reference}`}
                          >
                            Reject
                          </Button>
                        </>
                      ) : null}
                      {order.status === 'paid' ? (
                        <Button
                          kind="danger"
                          onClick={() => void act.execute(order.id, 'refund')}
                          label={`Refund ${order.reference}`}
                        >
                          Refund
                        </Button>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </Card>
      ) : null}
    </Page>
  );
}

interface Promotion {
  id: string;
  code: string;
  kind: string;
  percentOff: number | null;
  bonus: string | null;
  packageIds: string[] | null;
  redemptionsTaken: number;
  totalLimit: number | null;
  active: boolean;
}

export function AdminPromotionsScreen() {
  const promotions = useApi<{ items: Promotion[] }>('/admin/promotions?limit=100');
  const [form, setForm] = useState({ code: '', kind: 'percent_off', value: '', packageIds: '' });
  const create = useAction(async () => {
    const value = form.value.trim();
    const packageIds = form.packageIds
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    await api('POST', '/admin/promotions', {
      // Empty: the server makes a random code that cannot be guessed.
      ...(form.code.trim() ? { code: form.code.trim() } : {}),
      kind: form.kind,
      ...(form.kind === 'percent_off' ? { percentOff: Number(value) } : { bonus: value }),
      ...(packageIds.length > 0 ? { packageIds } : {}),
    });
    setForm({ code: '', kind: form.kind, value: '', packageIds: '' });
    await promotions.reload();
  });
  const toggle = useAction(async (promotion: Promotion) => {
    await api('PATCH', `/admin/promotions/${promotion.id}`, { active: !promotion.active });
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
              onChange={(event) => setForm({ ...form, kind: event.target.value })}
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
      </Card>
    </Page>
  );
}
