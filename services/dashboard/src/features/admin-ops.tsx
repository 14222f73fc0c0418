import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { formatDate, groupDigits } from '../lib/format.ts';
import { useAction, useRead } from '../lib/query.ts';
import { Button, Card, Confirm, ErrorMessage, Field, Loading, Page } from '../lib/ui.tsx';
import { type AliasPrice, PRICE_PARTS } from './admin-catalog.tsx';
import { AuditLog } from './audit-log.tsx';

function AccountEmail(props: { id: string }) {
  const account = useRead('/api/v1/admin/accounts/{id}', { params: { path: { id: props.id } } });
  return <strong>{account.data?.email ?? props.id}</strong>;
}

type Held = Schemas['HeldReservation'];

type AdminCatalog = Schemas['AdminCatalog'];
type AdminAlias = AdminCatalog['aliases'][number];
type AdminPackage = AdminCatalog['packages'][number];

/** The alias as PUT takes it, with new prices (null: only packages pay) and package rate. */
function aliasBody(alias: AdminAlias, price: AliasPrice | null, packageRate: string) {
  const [only] = alias.upstreams;
  const single = alias.upstreams.length === 1 && only && only.priority === 0 && only.weight === 1;
  return {
    ...(single
      ? { providerId: alias.providerId, upstreamModel: alias.upstreamModel, cost: only.cost ?? null }
      : { upstreams: alias.upstreams }),
    protocols: alias.protocols,
    published: alias.published,
    price,
    defaultMaxOutputTokens: alias.defaultMaxOutputTokens,
    maxOutputTokens: alias.maxOutputTokens,
    packageRate,
  };
}

/** The package as PUT takes it, counting raw tokens or weighted units. */
function packageBody(pack: AdminPackage, counts: AdminPackage['counts']) {
  const { id: _id, counts: _counts, ...rest } = pack;
  return { ...rest, counts };
}

/** Credits per token of each usage part and per call; empty input and output: packages only. */
function AliasPriceForm(props: { alias: AdminAlias; onSaved: () => Promise<void> }) {
  const [price, setPrice] = useState<AliasPrice>(
    props.alias.price ?? {
      input: '',
      output: '',
      cacheRead: '',
      cacheWrite: '',
      cacheWrite1h: '',
      request: '',
    },
  );
  const [packageRate, setPackageRate] = useState(props.alias.packageRate);
  const save = useAction(async () => {
    const packagesOnly = price.input === '' && price.output === '';
    // Parts left empty take their defaults (docs/pricing.md): the input price, or 0 per call.
    const given = Object.fromEntries(Object.entries(price).filter(([, value]) => value !== ''));
    await unwrap(
      client.PUT('/api/v1/admin/catalog/aliases/{alias}', {
        params: { path: { alias: props.alias.alias } },
        body: aliasBody(props.alias, packagesOnly ? null : (given as AliasPrice), packageRate),
      }),
    );
    await props.onSaved();
  });
  return (
    <form
      className="price-form"
      aria-label={`Prices of ${props.alias.alias}`}
      onSubmit={(event) => {
        event.preventDefault();
        void save.execute();
      }}
    >
      <ErrorMessage
        error={save.error}
        fields={[...PRICE_PARTS.map(([part]) => `price.${part}`), 'packageRate']}
      />
      {PRICE_PARTS.map(([part, label]) => (
        <Field
          key={part}
          label={`Credits per ${label.toLowerCase()}`}
          name={`price.${part}`}
          error={save.error}
          inputMode="numeric"
          value={price[part]}
          onChange={(value) => setPrice({ ...price, [part]: value.trim() })}
        />
      ))}
      <Field
        label="Units of a weighted package per token"
        name="packageRate"
        error={save.error}
        inputMode="numeric"
        value={packageRate}
        onChange={(value) => setPackageRate(value.trim())}
      />
      <p className="hint">
        Leave input and output empty for an alias only packages pay for. Empty cache prices are the input
        price; an empty one-hour write price is the five-minute one. Packages counting weighted units draw the
        package rate per token of this alias (1 for the cheapest alias); packages counting raw tokens draw
        one.
      </p>
      <Button type="submit" kind="primary" pending={save.pending}>
        Save prices
      </Button>
    </form>
  );
}

function priceSummary(price: AliasPrice | null): string {
  if (!price) return ' · packages only';
  const request = price.request === '0' ? '' : `, ${groupDigits(price.request)} per call`;
  return ` · credits per token: input ${groupDigits(price.input)}, output ${groupDigits(price.output)}, cache read ${groupDigits(price.cacheRead)}, cache write ${groupDigits(price.cacheWrite)} (1 h: ${groupDigits(price.cacheWrite1h)})${request}`;
}

function amountOf(amounts: { tokens: string; credits: string }): string {
  return `${groupDigits(amounts.tokens)} tokens and ${groupDigits(amounts.credits)} credits`;
}

/**
 * Settle a held call with the usage learned elsewhere (e.g. the provider's usage report), or
 * release it; confirmed in a dialog naming the account and what it holds, with a required reason.
 */
function ResolveHold(props: {
  item: Held;
  action: 'settle' | 'release';
  onCancel: () => void;
  onDone: (message: string) => Promise<void>;
}) {
  const { item, action } = props;
  const [note, setNote] = useState('');
  const [inputTokens, setInputTokens] = useState('');
  const [outputTokens, setOutputTokens] = useState('');
  const resolve = useAction(async () => {
    const answer = await unwrap(
      client.POST('/api/v1/admin/reservations/{id}/resolve', {
        params: { path: { id: item.id } },
        body:
          action === 'settle'
            ? { action, note, inputTokens: inputTokens.trim(), outputTokens: outputTokens.trim() }
            : { action, note },
      }),
    );
    await props.onDone(
      action === 'settle'
        ? `Settled the ${item.alias} call: charged ${amountOf(answer.charged)}.`
        : `Released the hold of the ${item.alias} call: nothing is charged for it.`,
    );
  });
  return (
    <Confirm
      title={`${action === 'settle' ? 'Settle' : 'Release'} the ${item.alias} call holding ${amountOf(item.reserved)}?`}
      confirmLabel={action === 'settle' ? 'Settle' : 'Release'}
      pending={resolve.pending}
      onConfirm={() => void resolve.execute()}
      onCancel={props.onCancel}
    >
      <ErrorMessage error={resolve.error} fields={['note', 'inputTokens', 'outputTokens']} />
      <p>
        Account <AccountEmail id={item.accountId} />.{' '}
        {action === 'settle'
          ? 'The call is charged the usage below at the prices it was reserved at; what it held beyond that returns to the balance.'
          : 'The call is charged nothing and what it reserved returns to the balance.'}
      </p>
      {action === 'settle' ? (
        <>
          <Field
            label="Input tokens"
            name="inputTokens"
            error={resolve.error}
            inputMode="numeric"
            value={inputTokens}
            onChange={setInputTokens}
          />
          <Field
            label="Output tokens"
            name="outputTokens"
            error={resolve.error}
            inputMode="numeric"
            value={outputTokens}
            onChange={setOutputTokens}
          />
        </>
      ) : null}
      <Field label="Reason (required)" name="note" error={resolve.error} value={note} onChange={setNote} />
    </Confirm>
  );
}

/** Why a breaker opened, in words (docs/routing.md, circuit breakers). */
const BREAKER_REASONS: Record<string, string> = {
  consecutive_failures: 'failures in a row',
  error_rate: 'error rate over the window',
  probe_failed: 'its probe failed',
};

/** Held reservations, refused provider credentials, margin, the audit log and the catalogue. */
export function AdminOperationsScreen() {
  const held = useRead('/api/v1/admin/reservations/held');
  const refused = useRead('/api/v1/admin/routing/credentials');
  const breakers = useRead('/api/v1/admin/routing/breakers');
  const margin = useRead('/api/v1/admin/reports/margin');
  const catalog = useRead('/api/v1/admin/catalog');
  const [editing, setEditing] = useState<string | null>(null);
  const countPackage = useAction(async (pack: AdminPackage) => {
    const counts = pack.counts === 'weighted' ? 'tokens' : 'weighted';
    await unwrap(
      client.PUT('/api/v1/admin/catalog/packages/{id}', {
        params: { path: { id: pack.id } },
        body: packageBody(pack, counts),
      }),
    );
    await catalog.reload();
  });
  const writeOffs = useRead('/api/v1/admin/reports/write-offs');
  const [resolving, setResolving] = useState<{ item: Held; action: 'settle' | 'release' } | null>(null);
  const [resolved, setResolved] = useState<string | null>(null);
  return (
    <Page title="Operations">
      <Card title="Held reservations">
        <ErrorMessage error={held.error} />
        {resolved ? (
          <p className="alert success" role="status">
            {resolved}
          </p>
        ) : null}
        {held.loading && !held.data ? <Loading /> : null}
        {held.data && held.data.length === 0 ? (
          <p className="muted">Nothing is held: every call was settled or released.</p>
        ) : null}
        <ul className="sessions">
          {held.data?.map((item) => (
            <li key={item.id}>
              <span>
                <AccountEmail id={item.accountId} /> · <code>{item.alias}</code> · holds{' '}
                {amountOf(item.reserved)} · {item.reason ?? 'usage unknown'} · {formatDate(item.heldAt)}
              </span>
              <span className="row">
                <Button
                  onClick={() => setResolving({ item, action: 'settle' })}
                  label={`Settle reservation ${item.id}`}
                >
                  Settle
                </Button>
                <Button
                  onClick={() => setResolving({ item, action: 'release' })}
                  label={`Release reservation ${item.id}`}
                >
                  Release
                </Button>
              </span>
            </li>
          ))}
        </ul>
        {resolving ? (
          <ResolveHold
            {...resolving}
            onCancel={() => setResolving(null)}
            onDone={async (message) => {
              setResolving(null);
              setResolved(message);
              await held.reload();
            }}
          />
        ) : null}
      </Card>
      <Card title="Provider credentials out of rotation">
        <ErrorMessage error={refused.error} />
        {refused.data && refused.data.length === 0 ? (
          <p className="muted">Every provider accepts its credentials.</p>
        ) : null}
        <ul>
          {refused.data?.map((item) => (
            <li key={`${item.providerId} ${item.credential}`}>
              <code>{item.credential}</code> of {item.providerId}: refused ({item.upstreamStatus ?? 'refusal'}
              ) since {formatDate(item.refusedAt)} by {item.gateways} gateway{item.gateways === 1 ? '' : 's'}.
              The others of its pool serve meanwhile. Replace the secret, then restart the gateways.
            </li>
          ))}
        </ul>
      </Card>
      <Card title="Upstream circuit breakers">
        <ErrorMessage error={breakers.error} />
        {breakers.data && breakers.data.length === 0 ? (
          <p className="muted">
            Every upstream is taking calls: no breaker is open, no provider asked to wait.
          </p>
        ) : null}
        <ul>
          {breakers.data?.map((item) => (
            <li key={`${item.providerId} ${item.upstreamModel}`}>
              <code>{item.upstreamModel}</code> on {item.providerId}:{' '}
              {item.state === 'open' && item.openUntil
                ? `open since ${formatDate(item.changedAt)} (${BREAKER_REASONS[item.reason ?? ''] ?? item.reason ?? 'failing'}: ${item.failures} of ${item.calls} calls failed, last ${item.cause ?? 'a failure'}); one probe after ${formatDate(item.openUntil)}${item.trips > 1 ? `, cool-down ${item.trips} times in a row` : ''}.`
                : ''}
              {item.benchedUntil
                ? ` Benched by the provider (${item.cause ?? 'Retry-After'}) until ${formatDate(item.benchedUntil)}.`
                : ''}{' '}
              Calls go to the alias's other upstreams meanwhile.
            </li>
          ))}
        </ul>
      </Card>
      <Card title="Margin, last 30 days">
        <ErrorMessage error={margin.error} />
        {margin.data && margin.data.items.length === 0 ? (
          <p className="muted">No settled call in the period.</p>
        ) : null}
        <ul>
          {margin.data?.items.map((row) => (
            <li key={`${row.alias} ${row.providerId} ${row.upstreamModel}`}>
              <code>{row.alias}</code> on {row.providerId} ({row.upstreamModel}): {groupDigits(row.calls)}{' '}
              calls, {groupDigits(row.revenue.credits)} credits charged
              {row.revenue.tokens === '0' ? '' : ` and ${groupDigits(row.revenue.tokens)} package tokens`},
              cost{' '}
              {row.costCredits === null
                ? 'unknown (no cost price)'
                : `${groupDigits(row.costCredits)} credits, margin ${groupDigits(row.marginCredits ?? '0')}`}
            </li>
          ))}
        </ul>
      </Card>
      <Card title="Written off, last 30 days">
        <ErrorMessage error={writeOffs.error} />
        {writeOffs.data && writeOffs.data.items.length === 0 ? (
          <p className="muted">Nothing was written off: every call's usage was paid for.</p>
        ) : null}
        <ul data-testid="write-offs">
          {writeOffs.data?.items.map((row) => (
            <li key={`${row.accountId} ${row.alias}`}>
              <AccountEmail id={row.accountId} /> on <code>{row.alias}</code>: {amountOf(row.writtenOff)}{' '}
              beyond what the account had, over {groupDigits(row.reservations)} call
              {row.reservations === '1' ? '' : 's'}
            </li>
          ))}
        </ul>
        <p className="hint">Usage beyond the balance is recorded and not charged (docs: billing rules).</p>
      </Card>
      <Card title="Audit log">
        <AuditLog />
      </Card>
      <Card title="Catalogue">
        <ErrorMessage error={catalog.error ?? countPackage.error} />
        {catalog.data ? (
          <p className="hint" data-testid="catalog-rule">
            {catalog.data.managedByFile?.file
              ? `Entries marked "from the file" are managed by the catalogue file (${catalog.data.managedByFile.file}): change them there and run tollgate-admin sync-catalog, or restart. Other entries are edited here. `
              : 'No catalogue file is configured: every entry is edited here. '}
            A new provider credential (a secret name in SECRETS_FILE or the gateway's environment) is read
            when a gateway starts: restart the gateways after adding one. Catalogue changes reach running
            gateways within seconds.
          </p>
        ) : null}
        {catalog.data ? (
          <ul>
            {catalog.data.aliases.map((alias) => (
              <li key={alias.alias}>
                <code>{alias.alias}</code> → {alias.providerId}
                {alias.published ? '' : ' (unpublished)'}
                {priceSummary(alias.price)}
                {` · package rate ${groupDigits(alias.packageRate)}`}{' '}
                {catalog.data?.managedByFile?.aliases.includes(alias.alias) ? (
                  <span className="badge">from the file</span>
                ) : (
                  <Button
                    onClick={() => setEditing(editing === alias.alias ? null : alias.alias)}
                    // The visible text starts the accessible name (axe: label-content-name-mismatch).
                    label={`${editing === alias.alias ? 'Close the prices' : 'Edit prices'} of ${alias.alias}`}
                  >
                    {editing === alias.alias ? 'Close' : 'Edit prices'}
                  </Button>
                )}
                {editing === alias.alias ? (
                  <AliasPriceForm
                    alias={alias}
                    onSaved={async () => {
                      setEditing(null);
                      await catalog.reload();
                    }}
                  />
                ) : null}
              </li>
            ))}
            {catalog.data.packages.map((pack) => (
              <li key={pack.id}>
                package <code>{pack.id}</code>: {pack.name}, {groupDigits(pack.tokens)}{' '}
                {pack.counts === 'weighted' ? 'weighted units' : 'tokens'}
                {pack.published ? '' : ' (unpublished)'}
                {catalog.data?.managedByFile?.packages.includes(pack.id) ? (
                  <>
                    {' '}
                    <span className="badge">from the file</span>
                  </>
                ) : (
                  <>
                    {' '}
                    <Button
                      label={`${pack.counts === 'weighted' ? 'Count raw tokens' : 'Count weighted units'} in ${pack.id}`}
                      onClick={() => void countPackage.execute(pack)}
                      pending={countPackage.pending}
                    >
                      {pack.counts === 'weighted' ? 'Count raw tokens' : 'Count weighted units'}
                    </Button>
                  </>
                )}
              </li>
            ))}
          </ul>
        ) : null}
      </Card>
    </Page>
  );
}
