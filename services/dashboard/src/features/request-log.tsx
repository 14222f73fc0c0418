import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { type CreditValue, creditsToMoney, formatDate, groupDigits } from '../lib/format.ts';
import { Link } from '../lib/router.tsx';
import { Button, Card, Empty, ErrorMessage, Loading, Page, StateBadge, TableWrap } from '../lib/ui.tsx';
import { ReceiptRow } from './activity.tsx';

type LogItem = Schemas['ActivityItem'];

const PAGE = 50;

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
  const log = useInfiniteQuery({
    queryKey: ['/api/v1/me/activity', 'log'],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(client.GET('/api/v1/me/activity', { params: { query: { limit: PAGE, cursor: pageParam } } })),
    getNextPageParam: (page) => page.nextCursor ?? undefined,
  });
  const credit = useQuery({
    queryKey: ['/api/v1/catalog/credit'],
    queryFn: () => unwrap(client.GET('/api/v1/catalog/credit')),
  });
  const keys = useQuery({
    queryKey: ['/api/v1/me/api-keys'],
    queryFn: () => unwrap(client.GET('/api/v1/me/api-keys')),
  });
  const [open, setOpen] = useState<string | null>(null);
  const items = log.data?.pages.flatMap((page) => page.items) ?? [];
  const keyName = (id: string) => keys.data?.find((key) => key.id === id)?.name ?? '…';
  return (
    <Page title="Request log">
      <Card>
        <ErrorMessage error={log.error} />
        {log.isPending ? <Loading label="Loading calls…" /> : null}
        {log.data && items.length === 0 ? (
          <Empty title="No calls yet">
            Every call made with your keys appears here with its cost.{' '}
            <Link to="/use-key">See how to call a model</Link>.
          </Empty>
        ) : null}
        {items.length > 0 ? (
          <TableWrap label="Request log">
            <table data-testid="request-log">
              <caption className="sr-only">Calls made with your keys, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Model</th>
                  <th scope="col">Cost</th>
                  <th scope="col">Key</th>
                  <th scope="col">Input</th>
                  <th scope="col">Output</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Finish</th>
                  <th scope="col">State</th>
                  <th scope="col">Receipt</th>
                </tr>
              </thead>
              <tbody>
                {items.map((item) => (
                  <ReceiptRow
                    key={item.id}
                    item={item}
                    columns={10}
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
              </tbody>
            </table>
          </TableWrap>
        ) : null}
        {log.hasNextPage ? (
          <Button onClick={() => void log.fetchNextPage()} pending={log.isFetchingNextPage}>
            Older calls
          </Button>
        ) : null}
      </Card>
    </Page>
  );
}
