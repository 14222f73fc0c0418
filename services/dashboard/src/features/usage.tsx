import { useState } from 'react';
import { daysBetween, rowLabel, UsageChart } from '../lib/chart.tsx';
import type { Schemas } from '../lib/client.ts';
import { CreditMoney } from '../lib/credit.tsx';
import { groupDigits, utcDay } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Button, Card, Empty, ErrorMessage, Loading, Page, TableWrap } from '../lib/ui.tsx';

type SummaryRow = Schemas['UsageSummaryRow'];

function toCsv(rows: SummaryRow[], by: 'alias' | 'key'): string {
  const header = `day,${by},requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cache_write_1h_tokens,charged_tokens,charged_credits`;
  const lines = rows.map((row) =>
    [
      row.day,
      rowLabel(row),
      row.requests,
      row.inputTokens,
      row.outputTokens,
      row.cacheReadTokens ?? '0',
      row.cacheWriteTokens ?? '0',
      row.cacheWrite1hTokens ?? '0',
      row.charged.tokens,
      row.charged.credits,
    ].join(','),
  );
  return `${[header, ...lines].join('\n')}\n`;
}

export function UsageScreen() {
  const [from, setFrom] = useState(utcDay(29));
  const [to, setTo] = useState(utcDay(0));
  const [by, setBy] = useState<'alias' | 'key'>('alias');
  const valid = /^\d{4}-\d{2}-\d{2}$/.test(from) && /^\d{4}-\d{2}-\d{2}$/.test(to) && from <= to;
  const usage = useRead(valid ? '/api/v1/me/usage/summary' : null, { params: { query: { from, to, by } } });
  // Days are counted in the account's timezone (the one of its spend caps).
  const zone = useRead('/api/v1/me/spend-caps').data?.timeZone ?? 'UTC';

  function exportCsv() {
    if (!usage.data) return;
    const url = URL.createObjectURL(new Blob([toCsv(usage.data, by)], { type: 'text/csv' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = `usage-${from}-to-${to}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1_000);
  }

  return (
    <Page
      title="Usage"
      actions={
        <Button onClick={exportCsv} disabled={!usage.data || usage.data.length === 0}>
          Export CSV
        </Button>
      }
    >
      <form className="card row wrap" onSubmit={(event) => event.preventDefault()}>
        <div className="field">
          <label htmlFor="usage-from">From ({zone})</label>
          <input
            id="usage-from"
            type="date"
            value={from}
            max={to}
            onChange={(event) => setFrom(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="usage-to">To ({zone})</label>
          <input
            id="usage-to"
            type="date"
            value={to}
            min={from}
            onChange={(event) => setTo(event.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="usage-by">Per</label>
          <select id="usage-by" value={by} onChange={(event) => setBy(event.target.value as 'alias' | 'key')}>
            <option value="alias">model</option>
            <option value="key">key</option>
          </select>
        </div>
        {!valid ? (
          <p className="field-error" role="alert">
            Choose a start date on or before the end date.
          </p>
        ) : null}
      </form>
      <Card title="Tokens per day">
        <ErrorMessage error={usage.error} />
        {usage.loading && !usage.data ? <Loading /> : null}
        {usage.data && valid ? <UsageChart rows={usage.data} days={daysBetween(from, to)} /> : null}
      </Card>
      <Card title={by === 'key' ? 'Per day and key' : 'Per day and model'}>
        {usage.data && usage.data.length === 0 ? (
          <Empty title="No settled usage in this period">
            Pick a wider range, or make a call with one of your keys.
          </Empty>
        ) : null}
        {usage.data && usage.data.length > 0 ? (
          <TableWrap label="Usage by day">
            <table data-testid="usage-table">
              <caption className="sr-only">Usage per day and {by === 'key' ? 'key' : 'model alias'}</caption>
              <thead>
                <tr>
                  <th scope="col">Day ({zone})</th>
                  <th scope="col">{by === 'key' ? 'Key' : 'Model'}</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Input tokens</th>
                  <th scope="col">Output tokens</th>
                  <th scope="col">Cache reads</th>
                  <th scope="col">Cache writes (5 min / 1 h)</th>
                  <th scope="col">Charged tokens</th>
                  <th scope="col">Charged credits (money)</th>
                </tr>
              </thead>
              <tbody>
                {usage.data.map((row) => (
                  <tr key={`${row.day}-${rowLabel(row)}`}>
                    <td>{row.day}</td>
                    <td>
                      <code>{rowLabel(row)}</code>
                    </td>
                    <td>{groupDigits(row.requests)}</td>
                    <td>{groupDigits(row.inputTokens)}</td>
                    <td>{groupDigits(row.outputTokens)}</td>
                    <td>{groupDigits(row.cacheReadTokens ?? '0')}</td>
                    <td>
                      {groupDigits(row.cacheWriteTokens ?? '0')} /{' '}
                      {groupDigits(row.cacheWrite1hTokens ?? '0')}
                    </td>
                    <td>{groupDigits(row.charged.tokens)}</td>
                    <td>
                      {groupDigits(row.charged.credits)}{' '}
                      <CreditMoney credits={row.charged.credits} precision="exact" />
                    </td>
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
