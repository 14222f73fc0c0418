import { useState } from 'react';
import { api } from '../lib/api.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useApi } from '../lib/query.ts';
import { Button, ErrorMessage, Field } from '../lib/ui.tsx';

/** One spend cap with where it stands (GET /me/spend-caps, docs/billing/spend-caps.md). */
export interface SpendCap {
  id: string;
  keyId: string | null;
  setBy: 'customer' | 'reseller' | 'admin';
  unit: 'credits' | 'tokens';
  period: '5h' | 'day' | 'week' | 'month';
  timeZone: string;
  limit: string;
  used: string;
  remaining: string;
  windowStart: string;
  resetsAt: string | null;
}

export interface SpendCaps {
  timeZone: string;
  caps: SpendCap[];
}

const PERIOD: Record<SpendCap['period'], string> = {
  '5h': 'per 5 hours',
  day: 'per day',
  week: 'per week',
  month: 'per month',
};
const SET_BY: Record<SpendCap['setBy'], string> = {
  customer: 'set by you',
  reseller: 'set by your reseller',
  admin: 'set by the operator',
};

export function useSpendCaps() {
  return useApi<SpendCaps>('/me/spend-caps');
}

/** The caps that bound a key (its own and the account's), or the account's own when keyId is null. */
export function SpendCapList(props: { caps: SpendCap[]; label: string }) {
  if (props.caps.length === 0) return null;
  return (
    <ul className="spend-caps" aria-label={props.label}>
      {props.caps.map((cap) => (
        <li key={cap.id} data-testid={`spend-cap-${cap.period}-${cap.unit}`}>
          <strong>
            {groupDigits(cap.limit)} {cap.unit} {PERIOD[cap.period]}
          </strong>{' '}
          {cap.keyId === null ? 'on the account' : 'on this key'}, {SET_BY[cap.setBy]}:{' '}
          {groupDigits(cap.used)} used, {groupDigits(cap.remaining)} left
          <meter min={0} max={Number(cap.limit)} value={Number(cap.used)} aria-label="Share used" />
          <span className="muted">
            {cap.resetsAt
              ? `${cap.period === '5h' ? 'frees from' : 'resets'} ${formatDate(cap.resetsAt)}`
              : 'nothing counted in the last 5 hours'}
            {cap.period === '5h' ? '' : ` (${cap.timeZone})`}
          </span>
        </li>
      ))}
    </ul>
  );
}

/** The account's caps with the next reset of each, for the overview. */
export function AccountSpendCaps() {
  const caps = useSpendCaps();
  if (!caps.data || caps.data.caps.length === 0) return <ErrorMessage error={caps.error} />;
  return (
    <>
      <ErrorMessage error={caps.error} />
      <SpendCapList caps={caps.data.caps} label="Spend caps" />
    </>
  );
}

/** Sets (or with an empty limit removes) your own cap of a unit and period on one key. */
export function KeyCapForm(props: { keyId: string; onDone: () => void }) {
  const [form, setForm] = useState({ unit: 'credits', period: 'day', limit: '' });
  const save = useAction(async () => {
    await api('PUT', '/me/spend-caps', {
      keyId: props.keyId,
      unit: form.unit,
      period: form.period,
      limit: form.limit.trim() === '' ? null : form.limit.trim(),
    });
    props.onDone();
  });
  return (
    <form
      className="card"
      onSubmit={(event) => {
        event.preventDefault();
        void save.execute();
      }}
    >
      <h3>Spend cap on this key</h3>
      <div className="field">
        <label htmlFor={`cap-unit-${props.keyId}`}>Counts</label>
        <select
          id={`cap-unit-${props.keyId}`}
          value={form.unit}
          onChange={(event) => setForm({ ...form, unit: event.target.value })}
        >
          <option value="credits">credits</option>
          <option value="tokens">tokens</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor={`cap-period-${props.keyId}`}>Per</label>
        <select
          id={`cap-period-${props.keyId}`}
          value={form.period}
          onChange={(event) => setForm({ ...form, period: event.target.value })}
        >
          <option value="5h">5 hours (rolling)</option>
          <option value="day">day</option>
          <option value="week">week</option>
          <option value="month">month</option>
        </select>
      </div>
      <Field
        label="At most (empty removes your cap)"
        name="limit"
        inputMode="numeric"
        value={form.limit}
        onChange={(limit) => setForm({ ...form, limit })}
        error={save.error}
      />
      <ErrorMessage error={save.error} fields={['limit']} />
      <div className="row">
        <Button type="submit" kind="primary" pending={save.pending}>
          Save cap
        </Button>
      </div>
    </form>
  );
}
