import { useState } from 'react';
import type { Schemas } from '../lib/client.ts';
import { type CreditValue, creditsToMoney, formatDate, groupDigits } from '../lib/format.ts';
import { usePagedRead, useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Card, Empty, ErrorMessage, ListTable, Loading, Page, StateBadge } from '../lib/ui.tsx';
import { ReceiptRow } from './activity.tsx';

type LogItem = Schemas['ActivityItem'];

const PAGE = 50;
const COLUMNS = ['When', 'Model', 'Cost', 'Key', 'Input', 'Output', 'Duration', 'Finish', 'State', 'Receipt'];

/** What ended the call, in words (the settlement's outcome). */
function finishOf(item: LogItem): string {
  if (item.status === 'reserved') return 'in flight';
  if (!item.outcome || item.outcome === 'ok') return 'completed';
  return item.outcome.replaceAll('_', ' ');
}

function durationOf(item: LogItem): string {
  if (!item.finishedAt) return '–';
  const ms = new Date(item.finishedAt).getTime() - new Date(item.createdAt).getTime();
  return ms < 10_000 ? `${groupDigits(String(ms))} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function costOf(item: LogItem, value: CreditValue | null): string {
  const { tokens, credits } = item.charged;
  const parts = [
    tokens !== '0' ? `${groupDigits(tokens)} package tokens` : '',
    credits !== '0'
      ? `${groupDigits(credits)} credits${value ? ` (${creditsToMoney(credits, value, 'exact')})` : ''}`
      : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(' + ') : 'nothing';
}

/**
 * Every metered call of the account, newest first, paged by the API's cursor: time, model, key,
 * tokens, cost, duration, how it finished and its state; each row opens its receipt.
 */
export function RequestLogScreen() {
  const log = usePagedRead('/api/v1/me/activity', { limit: PAGE }, 'cursor');
  const credit = useRead('/api/v1/catalog/credit');
  const keys = useRead('/api/v1/me/api-keys');
  const [open, setOpen] = useState<string | null>(null);
  const items = log.data?.items ?? [];
  const keyName = (id: string) => keys.data?.find((key) => key.id === id)?.name ?? '…';
  return (
    <Page title="Request log">
      <Card>
        <ErrorMessage error={log.error} />
        {log.loading && !log.data ? <Loading label="Loading calls…" /> : null}
        {log.data && items.length === 0 ? (
          <Empty title="No calls yet">
            Every call made with your keys appears here with its cost.{' '}
            <Link to="/use-key">See how to call a model</Link>.
          </Empty>
        ) : null}
        {items.length > 0 ? (
          <ListTable
            label="Request log"
            caption="Calls made with your keys, newest first"
            testId="request-log"
            columns={COLUMNS}
            list={log}
            moreLabel="Older calls"
          >
            {items.map((item) => (
              <ReceiptRow
                key={item.id}
                item={item}
                columns={COLUMNS.length}
                open={open === item.id}
                onToggle={() => setOpen(open === item.id ? null : item.id)}
              >
                <td>{formatDate(item.createdAt)}</td>
                <td>
                  <code>{item.alias}</code>
                </td>
                <td>{costOf(item, credit.data?.value ?? null)}</td>
                <td>{keyName(item.keyId)}</td>
                <td>{item.inputTokens ? groupDigits(item.inputTokens) : '–'}</td>
                <td>{item.outputTokens ? groupDigits(item.outputTokens) : '–'}</td>
                <td>{durationOf(item)}</td>
                <td>{finishOf(item)}</td>
                <td>
                  <StateBadge state={item.status} />
                </td>
              </ReceiptRow>
            ))}
          </ListTable>
        ) : null}
      </Card>
    </Page>
  );
}
