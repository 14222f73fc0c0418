import { Fragment, type ReactNode, useState } from 'react';
import type { Schemas } from '../lib/client.ts';
import { CreditMoney, PricePerMillion } from '../lib/credit.tsx';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Button, Empty, ErrorMessage, Loading, StateBadge, TableWrap } from '../lib/ui.tsx';

type ActivityItem = Schemas['ActivityItem'];
type Receipt = Schemas['Receipt'];

/** `inputTokens` -> `input`, `cacheWrite1hTokens` -> `cache write 1h`. */
function partName(name: string): string {
  return name
    .replace(/Tokens$/, '')
    .replace(/([a-z])([A-Z0-9])/g, '$1 $2')
    .toLowerCase();
}

/** The credit price of a usage part (`inputTokens` is priced by `input`), when credit paid. */
function priceOf(receipt: Receipt, part: string): string | undefined {
  return receipt.prices?.[part.replace(/Tokens$/, '')];
}

export function ReceiptDetails(props: { id: string }) {
  const receipt = useRead('/api/v1/me/activity/{id}', { params: { path: { id: props.id } } });
  if (receipt.loading && !receipt.data) return <Loading label="Loading the receipt…" />;
  if (receipt.error) return <ErrorMessage error={receipt.error} />;
  const data = receipt.data;
  if (!data) return null;
  return (
    <dl className="receipt" data-testid="receipt">
      <dt>Request id</dt>
      <dd>
        <code>{data.requestId}</code>
      </dd>
      <dt>State</dt>
      <dd>
        {data.state}
        {data.holdReason ? ` (${data.holdReason})` : ''}
      </dd>
      {data.usage
        ? Object.entries(data.usage).map(([part, tokens]) => (
            <Fragment key={part}>
              <dt>{partName(part)}</dt>
              <dd>
                {groupDigits(tokens)} tokens
                {priceOf(data, part) ? (
                  <>
                    {` at ${groupDigits(priceOf(data, part)!)} credits each `}
                    <PricePerMillion creditsPerToken={priceOf(data, part)!} />
                  </>
                ) : null}
              </dd>
            </Fragment>
          ))
        : null}
      <dt>Paid from</dt>
      <dd>
        {data.drawn.length === 0
          ? 'nothing'
          : data.drawn.map((draw, index) => (
              <Fragment key={`${draw.source}-${draw.entitlementId ?? index}`}>
                {index > 0 ? '; ' : ''}
                {draw.source === 'credit' ? (
                  <>
                    {groupDigits(draw.amount)} credits from the balance{' '}
                    <CreditMoney credits={draw.amount} precision="exact" testId="receipt-money" />
                  </>
                ) : (
                  `${groupDigits(draw.amount)} tokens from ${draw.packageId ? `package ${draw.packageId}` : 'a grant'}`
                )}
              </Fragment>
            ))}
      </dd>
      {data.writtenOff.tokens !== '0' || data.writtenOff.credits !== '0' ? (
        <>
          <dt>Written off</dt>
          <dd>
            {groupDigits(data.writtenOff.tokens)} tokens, {groupDigits(data.writtenOff.credits)} credits
          </dd>
        </>
      ) : null}
    </dl>
  );
}

/**
 * A call's row with its receipt toggle: the row's cells, then a button that opens (or hides) the
 * call's receipt in a row of its own beneath, spanning the table's `columns`.
 */
export function ReceiptRow(props: {
  item: Pick<ActivityItem, 'id' | 'alias' | 'createdAt'>;
  columns: number;
  open: boolean;
  onToggle: () => void;
  children: ReactNode;
}) {
  const { item, open } = props;
  return (
    <>
      <tr>
        {props.children}
        <td>
          <Button
            onClick={props.onToggle}
            label={`${open ? 'Hide' : 'Show'} the receipt of the ${item.alias} call of ${formatDate(item.createdAt)}`}
          >
            {open ? 'Hide' : 'Receipt'}
          </Button>
        </td>
      </tr>
      {open ? (
        <tr>
          <td colSpan={props.columns}>
            <ReceiptDetails id={item.id} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

/** Recent metered calls, for the whole account or one key (`source`: another account's, for admins). */
export function ActivityTable(props: {
  keyId?: string;
  limit?: number;
  caption: string;
  accountId?: string;
}) {
  const [open, setOpen] = useState<string | null>(null);
  // Receipts are the account's own: not on an admin's view of another account.
  const receipts = !props.accountId;
  const query = { limit: props.limit ?? 20, keyId: props.keyId };
  const own = useRead(props.accountId ? null : '/api/v1/me/activity', { params: { query } });
  const other = useRead(props.accountId ? '/api/v1/admin/accounts/{id}/activity' : null, {
    params: { path: { id: props.accountId ?? '' }, query },
  });
  const activity = props.accountId ? other : own;
  if (activity.loading && !activity.data) return <Loading label="Loading activity…" />;
  if (activity.error) return <ErrorMessage error={activity.error} />;
  const items = activity.data?.items ?? [];
  if (items.length === 0 && props.accountId) return <p className="muted">No calls yet.</p>;
  if (items.length === 0) {
    return (
      <Empty title="No calls yet">
        Calls made with your keys appear here. <Link to="/use-key">See how to call a model</Link>.
      </Empty>
    );
  }
  return (
    <TableWrap label="Activity">
      <table data-testid="activity">
        <caption className="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Model</th>
            <th scope="col">API</th>
            <th scope="col">State</th>
            <th scope="col">Input</th>
            <th scope="col">Output</th>
            <th scope="col">Charged</th>
            {receipts ? <th scope="col">Receipt</th> : null}
          </tr>
        </thead>
        <tbody>
          {items.map((item) =>
            receipts ? (
              <ReceiptRow
                key={item.id}
                item={item}
                columns={8}
                open={open === item.id}
                onToggle={() => setOpen(open === item.id ? null : item.id)}
              >
                <ActivityCells item={item} />
              </ReceiptRow>
            ) : (
              <tr key={item.id}>
                <ActivityCells item={item} />
              </tr>
            ),
          )}
        </tbody>
      </table>
    </TableWrap>
  );
}

function ActivityCells(props: { item: ActivityItem }) {
  const { item } = props;
  return (
    <>
      <td>{formatDate(item.createdAt)}</td>
      <td>
        <code>{item.alias}</code>
      </td>
      <td>{item.surface}</td>
      <td>
        <StateBadge state={item.status} />
        {item.outcome && item.outcome !== 'ok' ? <span className="muted"> {item.outcome}</span> : null}
      </td>
      <td>{item.inputTokens ? groupDigits(item.inputTokens) : '–'}</td>
      <td>{item.outputTokens ? groupDigits(item.outputTokens) : '–'}</td>
      <td>
        {item.charged.tokens !== '0' ? `${groupDigits(item.charged.tokens)} tokens` : ''}
        {item.charged.tokens !== '0' && item.charged.credits !== '0' ? ' + ' : ''}
        {item.charged.credits !== '0' ? (
          <>
            {groupDigits(item.charged.credits)} credits{' '}
            <CreditMoney credits={item.charged.credits} precision="exact" />
          </>
        ) : null}
        {item.charged.tokens === '0' && item.charged.credits === '0' ? 'nothing' : ''}
      </td>
    </>
  );
}
