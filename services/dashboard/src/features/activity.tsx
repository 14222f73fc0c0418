import { formatDate, groupDigits } from '../lib/format.ts';
import { useApi } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Empty, ErrorMessage, Loading, StateBadge, TableWrap } from '../lib/ui.tsx';

export interface ActivityItem {
  id: string;
  keyId: string;
  alias: string;
  surface: string;
  status: 'reserved' | 'settled' | 'released' | 'held';
  outcome: string | null;
  httpStatus: number | null;
  inputTokens: string | null;
  outputTokens: string | null;
  charged: { tokens: string; credits: string };
  createdAt: string;
}

/** Recent metered calls, for the whole account or one key (`source`: another account's, for admins). */
export function ActivityTable(props: { keyId?: string; limit?: number; caption: string; source?: string }) {
  const query = new URLSearchParams({ limit: String(props.limit ?? 20) });
  if (props.keyId) query.set('keyId', props.keyId);
  const activity = useApi<{ items: ActivityItem[] }>(`${props.source ?? '/me/activity'}?${query}`);
  if (activity.loading && !activity.data) return <Loading label="Loading activity…" />;
  if (activity.error) return <ErrorMessage error={activity.error} />;
  const items = activity.data?.items ?? [];
  if (items.length === 0 && props.source) return <p className="muted">No calls yet.</p>;
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
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={item.id}>
              <td>{formatDate(item.createdAt)}</td>
              <td>
                <code>{item.alias}</code>
              </td>
              <td>{item.surface}</td>
              <td>
                <StateBadge state={item.status} />
                {item.outcome && item.outcome !== 'ok' ? (
                  <span className="muted"> {item.outcome}</span>
                ) : null}
              </td>
              <td>{item.inputTokens ? groupDigits(item.inputTokens) : '–'}</td>
              <td>{item.outputTokens ? groupDigits(item.outputTokens) : '–'}</td>
              <td>
                {item.charged.tokens !== '0' ? `${groupDigits(item.charged.tokens)} tokens` : ''}
                {item.charged.tokens !== '0' && item.charged.credits !== '0' ? ' + ' : ''}
                {item.charged.credits !== '0' ? `${groupDigits(item.charged.credits)} credits` : ''}
                {item.charged.tokens === '0' && item.charged.credits === '0' ? 'nothing' : ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
