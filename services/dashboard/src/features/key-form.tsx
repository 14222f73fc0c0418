import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatBytes, groupDigits } from '../lib/format.ts';
import { useAction, useRead } from '../lib/query.ts';
import { Button, ErrorMessage, Field } from '../lib/ui.tsx';

type ApiKey = Schemas['ApiKey'];

const LIMITS = [
  ['maxOutputTokens', 'Max output tokens per call'],
  ['requestsPerMinute', 'Requests per minute'],
  ['concurrency', 'Calls at once'],
  ['maxRequestBytes', 'Max request size (KB)'],
] as const;
type LimitField = (typeof LIMITS)[number][0];

/** Request sizes are typed and shown in KB; the API takes bytes. */
const BYTES_PER_KB = 1024;

function shown(field: LimitField, value: number): string {
  return field === 'maxRequestBytes' ? formatBytes(value) : groupDigits(value);
}

/** Name, scope, expiry and ceilings; an empty ceiling takes the account's default, shown beside it. */
export function CreateKeyForm(props: {
  models: string[];
  onCreated: (created: { key: ApiKey; secret: string }) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState<string[]>([]);
  const [expiresOn, setExpiresOn] = useState('');
  const [limits, setLimits] = useState<Record<string, string>>({});
  const maxima = useRead('/api/v1/me/api-keys/limits');
  const create = useAction(async () => {
    const ceilings = Object.fromEntries(
      Object.entries(limits)
        .filter(([, value]) => value.trim() !== '')
        .map(([field, value]) => [
          field,
          field === 'maxRequestBytes' ? Math.round(Number(value) * BYTES_PER_KB) : Number(value),
        ]),
    );
    const created = await unwrap(
      client.POST('/api/v1/me/api-keys', {
        body: {
          name,
          scope: scope.length > 0 ? scope : null,
          expiresAt: expiresOn ? new Date(`${expiresOn}T23:59:59Z`).toISOString() : null,
          ...(Object.keys(ceilings).length > 0 ? { limits: ceilings } : {}),
        },
      }),
    );
    props.onCreated(created);
  });
  const fields = ['name', 'scope', 'expiresAt', ...LIMITS.map(([field]) => `limits.${field}`)];
  return (
    <form
      className="card"
      aria-label="Create a key"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        void create.execute();
      }}
    >
      <h2>Create a key</h2>
      <ErrorMessage error={create.error} fields={fields} />
      <Field
        label="Name"
        name="name"
        value={name}
        onChange={setName}
        error={create.error}
        hint="For you to recognise it, e.g. laptop or CI."
        required
      />
      <fieldset className="field">
        <legend>Models this key may call</legend>
        <p className="hint">Pick none to allow every published model.</p>
        <div className="checks">
          {props.models.map((alias) => (
            <label key={alias} className="check">
              <input
                type="checkbox"
                name="scope"
                value={alias}
                checked={scope.includes(alias)}
                onChange={(event) =>
                  setScope(event.target.checked ? [...scope, alias] : scope.filter((item) => item !== alias))
                }
              />
              <code>{alias}</code>
            </label>
          ))}
        </div>
        {create.error?.fieldErrors.scope ? (
          <p className="field-error">{create.error.fieldErrors.scope.join(' ')}</p>
        ) : null}
      </fieldset>
      <Field
        label="Expires on (optional, end of day UTC)"
        name="expiresAt"
        type="date"
        value={expiresOn}
        onChange={setExpiresOn}
        error={create.error}
      />
      <details open={LIMITS.some(([field]) => create.error?.fieldErrors[`limits.${field}`])}>
        <summary>Ceilings (optional)</summary>
        <div className="grid">
          {LIMITS.map(([field, label]) => (
            <Field
              key={field}
              label={label}
              name={`limits.${field}`}
              inputMode="numeric"
              value={limits[field] ?? ''}
              onChange={(value) => setLimits({ ...limits, [field]: value })}
              error={create.error}
              hint={
                maxima.data
                  ? `Empty: ${shown(field, maxima.data.defaults[field])}. At most ${shown(field, maxima.data.effective[field])}.`
                  : undefined
              }
            />
          ))}
        </div>
      </details>
      <div className="row">
        <Button type="submit" kind="primary" pending={create.pending}>
          Create key
        </Button>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </form>
  );
}
