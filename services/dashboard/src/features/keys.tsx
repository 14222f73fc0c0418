import { useEffect, useState } from 'react';
import { ApiError } from '../lib/api.ts';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { CreditMoney } from '../lib/credit.tsx';
import { formatBytes, formatDate, groupDigits } from '../lib/format.ts';
import { read, useAction, useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Button, Confirm, Empty, ErrorMessage, Loading, Page, SecretBox, StateBadge } from '../lib/ui.tsx';
import { ActivityTable } from './activity.tsx';
import { CreateKeyForm } from './key-form.tsx';
import { KeyCapForm, type SpendCap, SpendCapList, useSpendCaps } from './spend-caps.tsx';

type ApiKey = Schemas['ApiKey'];

/** One key's calls of the last 30 days (the usage summary by key). */
interface KeyUsage {
  requests: number;
  tokens: bigint;
  credits: bigint;
}

type UsageByKeyRow = Schemas['UsageSummaryRow'];

function usageByKey(rows: UsageByKeyRow[] | undefined): Map<string, KeyUsage> {
  const byKey = new Map<string, KeyUsage>();
  for (const row of rows ?? []) {
    if (!row.keyId) continue;
    const sum = byKey.get(row.keyId) ?? { requests: 0, tokens: 0n, credits: 0n };
    sum.requests += row.requests;
    sum.tokens +=
      BigInt(row.inputTokens) +
      BigInt(row.outputTokens) +
      BigInt(row.cacheReadTokens) +
      BigInt(row.cacheWriteTokens) +
      BigInt(row.cacheWrite1hTokens);
    sum.credits += BigInt(row.charged.credits);
    byKey.set(row.keyId, sum);
  }
  return byKey;
}

type KeyStatus = Schemas['KeyStatus'];

export function KeysScreen() {
  const keys = useRead('/api/v1/me/api-keys');
  const caps = useSpendCaps();
  const models = useRead('/api/v1/catalog/models');
  const usage = useRead('/api/v1/me/usage/summary', { params: { query: { by: 'key' } } });
  const perKey = usageByKey(usage.data);
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ label: string; secret: string } | null>(null);

  const item = (key: ApiKey) => (
    <KeyItem
      key={key.id}
      apiKey={key}
      usage={perKey.get(key.id) ?? null}
      caps={caps.data?.caps.filter((cap) => cap.keyId === key.id || cap.keyId === null) ?? []}
      onCapsChanged={() => void caps.reload()}
      onChanged={() => void keys.reload()}
      onSecret={setShown}
    />
  );
  // Keys that can never call again are folded away below the usable ones.
  const live = keys.data?.filter((key) => key.state === 'active' || key.state === 'disabled') ?? [];
  const ended = keys.data?.filter((key) => key.state === 'revoked' || key.state === 'expired') ?? [];

  return (
    <Page
      title="API keys"
      actions={
        creating ? null : (
          <Button kind="primary" onClick={() => setCreating(true)}>
            Create key
          </Button>
        )
      }
    >
      {shown ? <SecretBox label={shown.label} secret={shown.secret} onDone={() => setShown(null)} /> : null}
      {creating ? (
        <CreateKeyForm
          models={models.data?.map((model) => model.alias) ?? []}
          onCancel={() => setCreating(false)}
          onCreated={(created) => {
            setCreating(false);
            setShown({ label: `New key "${created.key.name}"`, secret: created.secret });
            void keys.reload();
          }}
        />
      ) : null}
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data ? <Loading label="Loading keys…" /> : null}
      {keys.data && keys.data.length === 0 && !creating ? (
        <Empty title="You have no API keys yet">
          Create one with <strong>Create key</strong>, then see <Link to="/use-key">how to use it</Link>.
        </Empty>
      ) : null}
      <ul className="keys">{live.map(item)}</ul>
      {ended.length > 0 ? (
        <details className="ended-keys">
          <summary>Revoked and expired keys ({ended.length})</summary>
          <ul className="keys">{ended.map(item)}</ul>
        </details>
      ) : null}
    </Page>
  );
}

function KeyItem(props: {
  apiKey: ApiKey;
  usage: KeyUsage | null;
  caps: SpendCap[];
  onCapsChanged: () => void;
  onChanged: () => void;
  onSecret: (shown: { label: string; secret: string }) => void;
}) {
  const key = props.apiKey;
  const path = { id: key.id };
  const [status, setStatus] = useState<KeyStatus | null>(null);
  const [confirming, setConfirming] = useState<'revoke' | 'rotate' | null>(null);
  const [showActivity, setShowActivity] = useState(false);
  const [cappingKey, setCappingKey] = useState(false);
  const [throttled, setThrottled] = useState<string | null>(null);

  const copy = useAction(async () => {
    setThrottled(null);
    try {
      const revealed = await unwrap(client.POST('/api/v1/me/api-keys/{id}/reveal', { params: { path } }));
      props.onSecret({ label: `Key "${key.name}"`, secret: revealed.secret });
    } catch (error) {
      if (error instanceof ApiError && error.status === 429) {
        setThrottled(
          `Copy key is limited to protect your keys. Try again${error.retryAfter ? ` in ${error.retryAfter} seconds` : ' later'}.`,
        );
        return;
      }
      throw error;
    }
  });
  const validate = useAction(async () =>
    setStatus(await read('/api/v1/me/api-keys/{id}/status', { params: { path } })),
  );
  const changeState = useAction(async (next: 'active' | 'disabled' | 'revoked') => {
    await unwrap(
      client.PATCH('/api/v1/me/api-keys/{id}/status', { params: { path }, body: { status: next } }),
    );
    setConfirming(null);
    props.onChanged();
  });
  const rotate = useAction(async () => {
    const rotated = await unwrap(client.POST('/api/v1/me/api-keys/{id}/rotate', { params: { path } }));
    setConfirming(null);
    props.onSecret({ label: `New secret of "${key.name}"`, secret: rotated.secret });
    props.onChanged();
  });
  // A validation answers for the state it was asked in: a change of state clears it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: key.state is the trigger
  useEffect(() => setStatus(null), [key.state]);
  const live = key.state === 'active' || key.state === 'disabled';
  const error = copy.error ?? validate.error ?? (confirming ? null : changeState.error);

  return (
    <li className="card key" data-testid={`key-${key.name}`}>
      <div className="key-head">
        <h2>{key.name}</h2>
        <StateBadge state={key.state} />
      </div>
      <p>
        <span className="sr-only">Masked key: </span>
        <code>{key.mask}</code>
      </p>
      <dl className="facts">
        <div>
          <dt>Models</dt>
          <dd>{key.scope ? key.scope.join(', ') : 'all'}</dd>
        </div>
        <div>
          <dt>Expires</dt>
          <dd>{formatDate(key.expiresAt)}</dd>
        </div>
        <div>
          <dt>Ceilings</dt>
          <dd>
            {groupDigits(key.limits.maxOutputTokens)} output tokens,{' '}
            {groupDigits(key.limits.requestsPerMinute)}/min, {key.limits.concurrency} at once, requests up to{' '}
            {formatBytes(key.limits.maxRequestBytes)}
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>{formatDate(key.createdAt)}</dd>
        </div>
        <div>
          <dt>Last used</dt>
          <dd data-testid="key-last-used">
            {key.lastUsedAt ? `about ${formatDate(key.lastUsedAt)}` : 'never'}
          </dd>
        </div>
        <div>
          <dt>Last 30 days</dt>
          <dd data-testid="key-usage">
            {props.usage
              ? `${groupDigits(props.usage.requests)} call${props.usage.requests === 1 ? '' : 's'}, ${groupDigits(props.usage.tokens)} tokens, ${groupDigits(props.usage.credits)} credits`
              : 'no calls'}
          </dd>
        </div>
      </dl>
      <SpendCapList caps={props.caps} label={`Spend caps of ${key.name}`} />
      {cappingKey ? (
        <KeyCapForm
          keyId={key.id}
          onDone={() => {
            setCappingKey(false);
            props.onCapsChanged();
          }}
        />
      ) : null}
      <ErrorMessage error={error} />
      {throttled ? (
        <p className="alert warning" role="alert">
          {throttled}
        </p>
      ) : null}
      {!key.revealable && live ? (
        <p className="hint">
          This key was created before Copy key existed; rotate it once to make it copyable.
        </p>
      ) : null}
      {status && status.state === 'active' ? (
        <p className="alert success" role="status" data-testid="key-status">
          Valid: active; {groupDigits(status.remaining.tokens)} tokens and{' '}
          {groupDigits(status.remaining.credits)} credits <CreditMoney credits={status.remaining.credits} />{' '}
          usable; models: {status.scope ? status.scope.join(', ') : 'all'}.
        </p>
      ) : null}
      {status && status.state !== 'active' ? (
        <p className="alert warning" role="status" data-testid="key-status">
          Not usable: this key is {status.state}, so calls with it are refused
          {status.state === 'disabled' ? ' until it is enabled again' : ''}.
        </p>
      ) : null}
      <div className="row wrap">
        {live && key.revealable ? (
          <Button onClick={() => void copy.execute()} pending={copy.pending}>
            Copy key
          </Button>
        ) : null}
        <Button onClick={() => void validate.execute()} pending={validate.pending}>
          Validate
        </Button>
        {live ? <Button onClick={() => setConfirming('rotate')}>Rotate</Button> : null}
        {key.state === 'active' ? (
          <Button onClick={() => void changeState.execute('disabled')} pending={changeState.pending}>
            Disable
          </Button>
        ) : null}
        {key.state === 'disabled' ? (
          <Button onClick={() => void changeState.execute('active')} pending={changeState.pending}>
            Enable
          </Button>
        ) : null}
        {live ? (
          <Button kind="danger" onClick={() => setConfirming('revoke')}>
            Revoke
          </Button>
        ) : null}
        {live ? <Button onClick={() => setCappingKey(!cappingKey)}>Spend cap</Button> : null}
        <Button onClick={() => setShowActivity(!showActivity)}>
          {showActivity ? 'Hide activity' : 'Activity'}
        </Button>
      </div>
      {showActivity ? <ActivityTable keyId={key.id} caption={`Calls made with ${key.name}`} /> : null}
      {confirming === 'revoke' ? (
        <Confirm
          title={`Revoke "${key.name}"?`}
          confirmLabel="Revoke key"
          pending={changeState.pending}
          error={changeState.error}
          onCancel={() => setConfirming(null)}
          onConfirm={() => void changeState.execute('revoked')}
        >
          <p>Every call with this key fails from now on. This cannot be undone.</p>
        </Confirm>
      ) : null}
      {confirming === 'rotate' ? (
        <Confirm
          title={`Rotate "${key.name}"?`}
          confirmLabel="Rotate key"
          pending={rotate.pending}
          error={rotate.error}
          onCancel={() => setConfirming(null)}
          onConfirm={() => void rotate.execute()}
        >
          <p>A new secret is issued and the current one stops working at once.</p>
        </Confirm>
      ) : null}
    </li>
  );
}
