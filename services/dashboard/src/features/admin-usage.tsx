import { useState } from 'react';
import { CreditMoney } from '../lib/credit.tsx';
import { groupDigits, utcDay } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Button, Card, Empty, ErrorMessage, Loading, Page, TableWrap } from '../lib/ui.tsx';

type Grouping = 'day' | 'account' | 'key';

/**
 * Usage and spend across customers (GET /admin/reports/usage): per day, per customer (who spent
 * most first) and, for one customer, per day or per key. Days are each account's own.
 */
export function AdminUsageScreen() {
  const [from, setFrom] = useState(utcDay(29));
  const [to, setTo] = useState(utcDay(0));
  const [by, setBy] = useState<Grouping>('account');
  const [customer, setCustomer] = useState<{ id: string; email: string } | null>(null);
  const valid = /^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to) && from <= to;
  const grouping: Grouping = customer === null && by === 'key' ? 'account' : by;
  const report = useRead(valid ? '/api/v1/admin/reports/usage' : null, {
    params: {
      query: { from, to, by: grouping, ...(customer ? { accountId: customer.id } : {}) },
    },
  });
  const items = report.data?.items ?? [];
  const first = grouping === 'day' ? 'Day' : grouping === 'account' ? 'Customer' : 'Key';

  return (
    <Page title="Usage and spend">
      <form className="card row wrap align-end" onSubmit={(event) => event.preventDefault()}>
        <div className="field">
          <label htmlFor="report-from">From</label>
          <input
            id="report-from"
            type="date"
            value={from}
            max={to}
            onChange={(e) => setFrom(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="report-to">To</label>
          <input id="report-to" type="date" value={to} min={from} onChange={(e) => setTo(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="report-by">Per</label>
          <select id="report-by" value={grouping} onChange={(event) => setBy(event.target.value as Grouping)}>
            <option value="day">day</option>
            {customer ? <option value="key">key</option> : <option value="account">customer</option>}
          </select>
        </div>
        {customer ? (
          <p className="row">
            <span>
              Customer: <Link to={`/admin/accounts/${customer.id}`}>{customer.email}</Link>
            </span>
            <Button
              onClick={() => {
                setCustomer(null);
                setBy('account');
              }}
            >
              All customers
            </Button>
          </p>
        ) : null}
        {!valid ? (
          <p className="field-error" role="alert">
            Choose a start date on or before the end date.
          </p>
        ) : null}
      </form>
      <p className="hint">
        Each customer’s days are in its own timezone (the one of its spend caps; UTC without one).
      </p>
      <Card title={`Per ${first.toLowerCase()}`}>
        <ErrorMessage error={report.error} />
        {report.loading && !report.data ? <Loading /> : null}
        {report.data && items.length === 0 ? (
          <Empty title="No settled usage in this period">Pick a wider range.</Empty>
        ) : null}
        {items.length > 0 ? (
          <TableWrap label="Usage and spend">
            <table data-testid="usage-report">
              <caption className="sr-only">Usage and spend per {first.toLowerCase()}</caption>
              <thead>
                <tr>
                  <th scope="col">{first}</th>
                  <th scope="col">Spent credits (money)</th>
                  <th scope="col">Package tokens</th>
                  <th scope="col">Calls</th>
                  <th scope="col">Input tokens</th>
                  <th scope="col">Output tokens</th>
                </tr>
              </thead>
              <tbody>
                {items.map((row) => (
                  <tr key={row.day ?? row.keyId ?? row.accountId ?? ''}>
                    <td>
                      {grouping === 'day' ? row.day : null}
                      {grouping === 'key' ? (row.keyName ?? row.keyId) : null}
                      {grouping === 'account' && row.accountId ? (
                        <Button
                          label={`Per day for ${row.email ?? row.accountId}`}
                          onClick={() => {
                            setCustomer({ id: row.accountId!, email: row.email ?? row.accountId! });
                            setBy('day');
                          }}
                        >
                          {row.email ?? row.accountId}
                        </Button>
                      ) : null}
                    </td>
                    <td>
                      {groupDigits(row.charged.credits)}{' '}
                      <CreditMoney credits={row.charged.credits} precision="exact" />
                    </td>
                    <td>{groupDigits(row.charged.tokens)}</td>
                    <td>{groupDigits(row.requests)}</td>
                    <td>{groupDigits(row.inputTokens)}</td>
                    <td>{groupDigits(row.outputTokens)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        ) : null}
      </Card>
    </Page>
  );
}
