import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useRead } from '../lib/query.ts';
import { Button, Card, ErrorMessage, Field } from '../lib/ui.tsx';

/** One spend cap with where it stands (GET /me/spend-caps, docs/billing/spend-caps.md). */
export type SpendCap = Schemas['SpendCap'];
type CapChange = Schemas['SetSpendCapRequest'];

const PERIOD: Record<SpendCap['period'], string> = {
  '5h': 'per 5 hours',
  day: 'per day',
  week: 'per week',
  month: 'per month',
};
/** Who set a cap, as each party reading it says it. */
type Viewer = SpendCap['setBy'];
const SET_BY: Record<Viewer, Record<SpendCap['setBy'], string>> = {
  customer: { customer: 'set by you', reseller: 'set by your reseller', admin: 'set by the operator' },
  reseller: { customer: 'set by the customer', reseller: 'set by you', admin: 'set by the operator' },
  admin: { customer: 'set by the customer', reseller: 'set by its reseller', admin: 'set by an admin' },
};

export function useSpendCaps() {
  return useRead('/api/v1/me/spend-caps');
}

/** The caps that bound a key (its own and the account's), or the account's own when keyId is null. */
export function SpendCapList(props: { caps: SpendCap[]; label: string; viewer?: Viewer }) {
  const setBy = SET_BY[props.viewer ?? 'customer'];
  if (props.caps.length === 0) return null;
  return (
    <ul className="spend-caps" aria-label={props.label}>
      {props.caps.map((cap) => (
        <li key={cap.id} data-testid={`spend-cap-${cap.period}-${cap.unit}`}>
          <strong>
            {groupDigits(cap.limit)} {cap.unit} {PERIOD[cap.period]}
          </strong>{' '}
          {cap.keyId === null ? 'on the account' : 'on this key'}, {setBy[cap.setBy]}: {groupDigits(cap.used)}{' '}
          used, {groupDigits(cap.remaining)} left
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
  return (
    <CapForm
      save={(body) => unwrap(client.PUT('/api/v1/me/spend-caps', { body }))}
      title="Spend cap on this key"
      idSuffix={props.keyId}
      targets={[{ keyId: props.keyId, label: 'this key' }]}
      onDone={props.onDone}
    />
  );
}

/**
 * Sets (or with an empty limit removes) the caller's cap of a unit and period on one target: an
 * account (keyId null) or one of its keys, through `save` (docs/billing/spend-caps.md).
 */
function CapForm(props: {
  save: (change: CapChange) => Promise<unknown>;
  title: string;
  idSuffix: string;
  targets: { keyId: string | null; label: string }[];
  onDone: () => void | Promise<void>;
}) {
  const [form, setForm] = useState<{
    target: number;
    unit: CapChange['unit'];
    period: CapChange['period'];
    limit: string;
  }>({
    target: 0,
    unit: 'credits',
    period: 'day',
    limit: '',
  });
  const save = useAction(async () => {
    await props.save({
      keyId: props.targets[form.target]?.keyId ?? null,
      unit: form.unit,
      period: form.period,
      limit: form.limit.trim() === '' ? null : form.limit.trim(),
    });
    setForm({ ...form, limit: '' });
    await props.onDone();
  });
  return (
    <form
      className="card"
      aria-label={props.title}
      onSubmit={(event) => {
        event.preventDefault();
        void save.execute();
      }}
    >
      <h3>{props.title}</h3>
      {props.targets.length > 1 ? (
        <div className="field">
          <label htmlFor={`cap-target-${props.idSuffix}`}>On</label>
          <select
            id={`cap-target-${props.idSuffix}`}
            value={form.target}
            onChange={(event) => setForm({ ...form, target: Number(event.target.value) })}
          >
            {props.targets.map((target, index) => (
              <option key={target.keyId ?? 'account'} value={index}>
                {target.label}
              </option>
            ))}
          </select>
        </div>
      ) : null}
      <div className="field">
        <label htmlFor={`cap-unit-${props.idSuffix}`}>Counts</label>
        <select
          id={`cap-unit-${props.idSuffix}`}
          value={form.unit}
          onChange={(event) => setForm({ ...form, unit: event.target.value as CapChange['unit'] })}
        >
          <option value="credits">credits</option>
          <option value="tokens">tokens</option>
        </select>
      </div>
      <div className="field">
        <label htmlFor={`cap-period-${props.idSuffix}`}>Per</label>
        <select
          id={`cap-period-${props.idSuffix}`}
          value={form.period}
          onChange={(event) => setForm({ ...form, period: event.target.value as CapChange['period'] })}
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

/**
 * A reseller's or admin's view of an account's caps (its own and its keys'), with a form to set the
 * viewer's own cap on the account or on one key (through /reseller/customers/{id} or
 * /admin/accounts/{id}, by the viewer).
 */
export function ManagedSpendCaps(props: {
  accountId: string;
  keys: { id: string; name: string }[];
  viewer: 'reseller' | 'admin';
}) {
  const params = { path: { id: props.accountId } };
  const reseller = props.viewer === 'reseller';
  const customerCaps = useRead(reseller ? '/api/v1/reseller/customers/{id}/spend-caps' : null, { params });
  const accountCaps = useRead(reseller ? null : '/api/v1/admin/accounts/{id}/spend-caps', { params });
  const caps = reseller ? customerCaps : accountCaps;
  const save = (body: CapChange) =>
    unwrap(
      reseller
        ? client.PUT('/api/v1/reseller/customers/{id}/spend-caps', { params, body })
        : client.PUT('/api/v1/admin/accounts/{id}/spend-caps', { params, body }),
    );
  const all = caps.data?.caps ?? [];
  const targets = [
    { keyId: null, label: 'the whole account' },
    ...props.keys.map((key) => ({ keyId: key.id, label: `key ${key.name}` })),
  ];
  return (
    <Card title="Spend caps">
      <ErrorMessage error={caps.error} />
      {caps.data && all.length === 0 ? (
        <p className="muted">No spend caps on this account or its keys.</p>
      ) : null}
      <SpendCapList
        caps={all.filter((cap) => cap.keyId === null)}
        label="Spend caps on the account"
        viewer={props.viewer}
      />
      {props.keys
        .filter((key) => all.some((cap) => cap.keyId === key.id))
        .map((key) => (
          <div key={key.id}>
            <h3>Key {key.name}</h3>
            <SpendCapList
              caps={all.filter((cap) => cap.keyId === key.id)}
              label={`Spend caps of ${key.name}`}
              viewer={props.viewer}
            />
          </div>
        ))}
      {caps.data ? (
        <p className="hint">
          Calendar windows (day, week, month) are in the account's timezone, {caps.data.timeZone}. The
          customer cannot loosen your caps; your cap of a unit and period is the most it may set.
        </p>
      ) : null}
      <CapForm
        save={save}
        title="Set a spend cap"
        idSuffix={props.viewer}
        targets={targets}
        onDone={caps.reload}
      />
    </Card>
  );
}
