import { Fragment, useState } from 'react';
import { api } from '../lib/api.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Button, Card, Empty, ErrorMessage, Loading, Page, StateBadge, TableWrap } from '../lib/ui.tsx';
import { type ActivityItem, ReceiptDetails } from './activity.tsx';
import type { ApiKey } from './keys.tsx';

type LogItem = ActivityItem & { finishedAt: string | null };
interface LogPage {
  items: LogItem[];
  nextCursor: string | null;
}

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

function costOf(item: LogItem): string {
  const { tokens, credits } = item.charged;
  const parts = [
    tokens !== '0' ? `${groupDigits(tokens)} package tokens` : '',
    credits !== '0' ? `${groupDigits(credits)} credits` : '',
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(' + ') : 'nothing';
}

/**
 * Every metered call of the account, newest first, paged by the API's cursor: time, model, key,
 * tokens, cost, duration, how it finished and its state; each row opens its receipt.
 */
export function RequestLogScreen() {
  const first = useApi<LogPage>(`/me/activity?limit=${PAGE}`);
  const keys = useApi<ApiKey[]>('/me/api-keys');
  const [older, setOlder] = useState<LogPage[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const cursor = (older.at(-1) ?? first.data)?.nextCursor ?? null;
  const more = useAction(async () => {
    if (!cursor) return;
    const page = await api<LogPage>('GET', `/me/activity?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`);
    setOlder((pages) => [...pages, page]);
  });
  const items = [...(first.data?.items ?? []), ...older.flatMap((page) => page.items)];
  const keyName = (id: string) => keys.data?.find((key) => key.id === id)?.name ?? 'a deleted key';
  return (
    <Page title="Request log">
      <Card>
        <ErrorMessage error={first.error} />
        {first.loading && !first.data ? <Loading label="Loading calls…" /> : null}
        {first.data && items.length === 0 ? (
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
                  <Fragment key={item.id}>
                    <tr>
                      <td>{formatDate(item.createdAt)}</td>
                      <td>
                        <code>{item.alias}</code>
                      </td>
                      <td>{costOf(item)}</td>
                      <td>{keyName(item.keyId)}</td>
                      <td>{item.inputTokens ? groupDigits(item.inputTokens) : '–'}</td>
                      <td>{item.outputTokens ? groupDigits(item.outputTokens) : '–'}</td>
                      <td>{durationOf(item)}</td>
                      <td>{finishOf(item)}</td>
                      <td>
                        <StateBadge state={item.status} />
                      </td>
                      <td>
                        <Button
                          onClick={() => setOpen(open === item.id ? null : item.id)}
                          label={`${open === item.id ? 'Hide' : 'Show'} the receipt of the ${item.alias} call of ${formatDate(item.createdAt)}`}
                        >
                          {open === item.id ? 'Hide' : 'Receipt'}
                        </Button>
                      </td>
                    </tr>
                    {open === item.id ? (
                      <tr>
                        <td colSpan={10}>
                          <ReceiptDetails id={item.id} />
                        </td>
                      </tr>
                    ) : null}
                  </Fragment>
                ))}
              </tbody>
            </table>
          </TableWrap>
        ) : null}
        <ErrorMessage error={more.error} />
        {cursor ? (
          <Button onClick={() => void more.execute()} pending={more.pending}>
            Older calls
          </Button>
        ) : null}
      </Card>
    </Page>
  );
}
