import { useEffect } from 'react';
import { formatDate, formatDay } from '../lib/format.ts';
import { useRead } from '../lib/query.ts';
import { Card, ErrorMessage, Loading, Page } from '../lib/ui.tsx';

const LABELS: Record<string, string> = {
  gateway: 'Gateway',
  'control-plane': 'Control plane',
  database: 'Database',
  redis: 'Redis',
};

const HEADLINES = {
  operational: 'All systems operational',
  degraded: 'Some systems are degraded',
  down: 'Service disruption',
} as const;

function labelOf(name: string): string {
  return LABELS[name] ?? (name.startsWith('model:') ? name.slice('model:'.length) : name);
}

function uptimeOf(day: { samples: number; operational: number }): string {
  if (day.samples === 0) return 'no data';
  // A share for display only: counts stay integers, the percentage is text.
  return `${Math.floor((day.operational * 1000) / day.samples) / 10}% operational`;
}

/** Public: the state of each component now and a bar per day of the sampled history. */
export function StatusScreen() {
  const status = useRead('/api/v1/status');
  const { reload } = status;
  useEffect(() => {
    const timer = setInterval(() => void reload(), 30_000);
    return () => clearInterval(timer);
  }, [reload]);
  return (
    <Page title="Service status">
      <ErrorMessage error={status.error} />
      {status.loading && !status.data ? <Loading label="Checking every component…" /> : null}
      {status.data ? (
        <>
          <p className={`overall state-${status.data.status}`} data-testid="overall-status">
            {HEADLINES[status.data.status]}
          </p>
          <p className="muted">Checked {formatDate(status.data.checkedAt)}. Refreshes every 30 seconds.</p>
          <Card>
            <p className="status-legend muted">
              Each bar is one day (UTC), oldest first:
              <span>
                <i className="state-operational" aria-hidden="true" /> operational
              </span>
              <span>
                <i className="state-degraded" aria-hidden="true" /> degraded
              </span>
              <span>
                <i className="state-down" aria-hidden="true" /> down
              </span>
              <span>
                <i className="state-unknown" aria-hidden="true" /> no samples
              </span>
            </p>
            <ul className="components">
              {status.data.components.map((component) => (
                <li key={component.name} data-testid={`component-${component.name}`}>
                  <div className="component-head">
                    <h2>{labelOf(component.name)}</h2>
                    <span className={`badge state-${component.status}`}>{component.status}</span>
                  </div>
                  <p className="muted">{component.detail}</p>
                  <ol
                    className="history"
                    aria-label={`${labelOf(component.name)}, last ${component.history.length} days`}
                  >
                    {component.history.map((day) => (
                      <li
                        key={day.day}
                        className={`day state-${day.status}`}
                        title={`${formatDay(day.day)}: ${day.status}, ${uptimeOf(day)}`}
                      >
                        <span className="sr-only">
                          {formatDay(day.day)}: {day.status}, {uptimeOf(day)}
                        </span>
                      </li>
                    ))}
                  </ol>
                </li>
              ))}
            </ul>
          </Card>
        </>
      ) : null}
    </Page>
  );
}
