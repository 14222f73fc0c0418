import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { client, type Schemas, unwrap } from '../lib/client.ts';
import { groupDigits } from '../lib/format.ts';
import { Button, Card, ErrorMessage, Field, Loading, Page } from '../lib/ui.tsx';

const PROVIDER_KINDS = ['anthropic', 'openai', 'azure-openai', 'gemini', 'bedrock', 'vertex'] as const;
const PROTOCOLS = [
  ['messages', 'Anthropic Messages'],
  ['count_tokens', 'Anthropic count_tokens'],
  ['chat_completions', 'OpenAI Chat Completions'],
  ['responses', 'OpenAI Responses'],
] as const;

/** The priced parts of a call, with their labels (docs/pricing.md). */
export const PRICE_PARTS = [
  ['input', 'Input token'],
  ['output', 'Output token (reasoning included)'],
  ['cacheRead', 'Cache read token'],
  ['cacheWrite', 'Cache write token (5 minutes)'],
  ['cacheWrite1h', 'Cache write token (1 hour)'],
  ['request', 'Call'],
] as const;
type PricePart = (typeof PRICE_PARTS)[number][0];
export type AliasPrice = Record<PricePart, string>;
const NO_PRICE: AliasPrice = {
  input: '',
  output: '',
  cacheRead: '',
  cacheWrite: '',
  cacheWrite1h: '',
  request: '',
};

interface Provider {
  id: string;
  kind: string;
  baseUrl: string;
  credentialRefs: string[];
}

interface Upstream {
  providerId: string;
  upstreamModel: string;
  priority: number;
  weight: number;
  maxConcurrency?: number | null;
  requestsPerMinute?: number | null;
  /** The operator's cost price (kept as it is: edited from the API or the file). */
  cost?: AliasPrice | null;
}

interface Alias {
  alias: string;
  protocols: string[];
  upstreams: Upstream[];
  published: boolean;
  price: AliasPrice | null;
  maxOutputTokens: number;
  defaultMaxOutputTokens: number;
  /** Units of a weighted package one token costs: kept as it is (edited on the operations screen). */
  packageRate?: string;
}

type TestResult = Schemas['ProviderTest'];
const CATALOG = ['/api/v1/admin/catalog'] as const;

function putAlias(alias: Alias, change: Partial<Alias> = {}) {
  return unwrap(
    client.PUT('/api/v1/admin/catalog/aliases/{alias}', {
      params: { path: { alias: alias.alias.trim() } },
      body: aliasBody({ ...alias, ...change }) as Schemas['PutAliasRequest'],
    }),
  );
}

function FileBadge() {
  return <span className="badge">from the file</span>;
}

/** The alias as PUT takes it. */
function aliasBody(alias: Alias) {
  const packagesOnly = !alias.price || (alias.price.input === '' && alias.price.output === '');
  // Parts left empty take their defaults (docs/pricing.md): the input price, or 0 per call.
  const price = packagesOnly
    ? null
    : Object.fromEntries(Object.entries(alias.price ?? {}).filter(([, value]) => value !== ''));
  return {
    upstreams: alias.upstreams.map((upstream) => ({
      providerId: upstream.providerId,
      upstreamModel: upstream.upstreamModel,
      priority: upstream.priority,
      weight: upstream.weight,
      maxConcurrency: upstream.maxConcurrency ?? null,
      requestsPerMinute: upstream.requestsPerMinute ?? null,
      cost: upstream.cost ?? null,
    })),
    protocols: alias.protocols,
    published: alias.published,
    price,
    defaultMaxOutputTokens: alias.defaultMaxOutputTokens,
    maxOutputTokens: alias.maxOutputTokens,
    ...(alias.packageRate ? { packageRate: alias.packageRate } : {}),
  };
}

const toNumber = (value: string): number => (value.trim() === '' ? Number.NaN : Number(value));
const optionalNumber = (value: string): number | null => (value.trim() === '' ? null : Number(value));

/** Providers, aliases and their upstreams, edited here unless the catalogue file manages them. */
export function AdminCatalogScreen() {
  const queryClient = useQueryClient();
  const catalog = useQuery({ queryKey: CATALOG, queryFn: () => unwrap(client.GET('/api/v1/admin/catalog')) });
  const [editingProvider, setEditingProvider] = useState<string | null>(null);
  const [editingAlias, setEditingAlias] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const data = catalog.data;
  const managed = data?.managedByFile;
  const done = async (message: string) => {
    setEditingProvider(null);
    setEditingAlias(null);
    setSaved(message);
    await queryClient.invalidateQueries({ queryKey: CATALOG });
  };
  return (
    <Page title="Catalogue">
      <ErrorMessage error={catalog.error} />
      {catalog.isPending ? <Loading /> : null}
      {saved ? (
        <p className="alert success" role="status">
          {saved}
        </p>
      ) : null}
      {data ? (
        <p className="hint" data-testid="catalog-rule">
          {managed?.file
            ? `Entries marked "from the file" are managed by the catalogue file (${managed.file}): change them there and run tollgate-admin sync-catalog, or restart. Other entries are edited here. `
            : 'No catalogue file is configured: every entry is edited here. '}
          A new provider credential (a secret name in SECRETS_FILE or the gateway's environment) is read when
          a gateway starts: restart the gateways after adding one. Catalogue changes reach running gateways
          within seconds.
        </p>
      ) : null}
      {data ? (
        <Card title="Providers">
          <ul className="catalog-list">
            {data.providers.map((provider) => (
              <li key={provider.id}>
                <div className="row">
                  <span>
                    <strong>{provider.id}</strong> · {provider.kind} · <code>{provider.baseUrl}</code>
                    {provider.credentialRefs.length > 0 ? (
                      <> · credential {provider.credentialRefs.join(', ')}</>
                    ) : (
                      ' · no credential'
                    )}
                  </span>
                  {managed?.providers.includes(provider.id) ? (
                    <FileBadge />
                  ) : (
                    <Button
                      label={`${editingProvider === provider.id ? 'Close' : 'Edit'} provider ${provider.id}`}
                      onClick={() => setEditingProvider(editingProvider === provider.id ? null : provider.id)}
                    >
                      {editingProvider === provider.id ? 'Close' : 'Edit'}
                    </Button>
                  )}
                </div>
                {editingProvider === provider.id ? (
                  <ProviderForm
                    provider={provider}
                    onSaved={() => done(`Saved the provider ${provider.id}.`)}
                  />
                ) : null}
                <ConnectionTest
                  provider={provider}
                  model={
                    data.aliases
                      .flatMap((alias) => alias.upstreams)
                      .find((up) => up.providerId === provider.id)?.upstreamModel ?? ''
                  }
                />
              </li>
            ))}
          </ul>
          {editingProvider === '' ? (
            <ProviderForm provider={null} onSaved={(id) => done(`Added the provider ${id}.`)} />
          ) : (
            <Button onClick={() => setEditingProvider('')}>Add a provider</Button>
          )}
        </Card>
      ) : null}
      {data ? (
        <Card title="Aliases">
          <ul className="catalog-list">
            {data.aliases.map((alias) => (
              <li key={alias.alias}>
                <div className="row">
                  <span>
                    <strong>{alias.alias}</strong> {alias.published ? '(published)' : '(unpublished)'} ·{' '}
                    {alias.protocols.join(', ')} · {priceSummary(alias.price)}
                  </span>
                  {managed?.aliases.includes(alias.alias) ? (
                    <FileBadge />
                  ) : (
                    <span className="row">
                      <PublishButton alias={alias} onDone={done} />
                      <Button
                        label={`${editingAlias === alias.alias ? 'Close' : 'Edit'} alias ${alias.alias}`}
                        onClick={() => setEditingAlias(editingAlias === alias.alias ? null : alias.alias)}
                      >
                        {editingAlias === alias.alias ? 'Close' : 'Edit'}
                      </Button>
                    </span>
                  )}
                </div>
                <ul className="upstreams">
                  {alias.upstreams.map((upstream) => (
                    <li key={`${upstream.providerId} ${upstream.upstreamModel}`}>
                      {upstream.providerId} · <code>{upstream.upstreamModel}</code> · priority{' '}
                      {upstream.priority} · weight {upstream.weight}
                      {upstream.maxConcurrency ? ` · at most ${upstream.maxConcurrency} at once` : ''}
                      {upstream.requestsPerMinute ? ` · ${upstream.requestsPerMinute}/min` : ''}
                    </li>
                  ))}
                </ul>
                {editingAlias === alias.alias ? (
                  <AliasForm
                    alias={alias}
                    providers={data.providers}
                    onSaved={() => done(`Saved the alias ${alias.alias}.`)}
                  />
                ) : null}
              </li>
            ))}
          </ul>
          {editingAlias === '' ? (
            <AliasForm
              alias={null}
              providers={data.providers}
              onSaved={(name) => done(`Added the alias ${name}.`)}
            />
          ) : (
            <Button onClick={() => setEditingAlias('')}>Add an alias</Button>
          )}
        </Card>
      ) : null}
      {data ? (
        <Card title="Packages">
          <ul>
            {data.packages.map((pack) => (
              <li key={pack.id}>
                <strong>{pack.name}</strong> (<code>{pack.id}</code>): {groupDigits(pack.tokens)} tokens
                {pack.published ? '' : ' (unpublished)'}{' '}
                {managed?.packages.includes(pack.id) ? <FileBadge /> : null}
              </li>
            ))}
          </ul>
        </Card>
      ) : null}
    </Page>
  );
}

function priceSummary(price: AliasPrice | null): string {
  if (!price) return 'packages only';
  const request = price.request === '0' ? '' : `, ${groupDigits(price.request)} per call`;
  return `credits per token: input ${groupDigits(price.input)}, output ${groupDigits(price.output)}${request}`;
}

function PublishButton(props: { alias: Alias; onDone: (message: string) => Promise<void> }) {
  const { alias } = props;
  const toggle = useMutation({
    mutationFn: () => putAlias(alias, { published: !alias.published }),
    onSuccess: () =>
      props.onDone(
        alias.published
          ? `${alias.alias} is unpublished: keys can no longer call it.`
          : `${alias.alias} is published: keys may call it.`,
      ),
  });
  return (
    <>
      <ErrorMessage error={toggle.error} />
      <Button
        kind={alias.published ? 'secondary' : 'primary'}
        pending={toggle.isPending}
        label={`${alias.published ? 'Unpublish' : 'Publish'} ${alias.alias}`}
        onClick={() => toggle.mutate()}
      >
        {alias.published ? 'Unpublish' : 'Publish'}
      </Button>
    </>
  );
}

function ProviderForm(props: { provider: Provider | null; onSaved: (id: string) => Promise<void> }) {
  const [id, setId] = useState(props.provider?.id ?? '');
  const [kind, setKind] = useState(props.provider?.kind ?? 'openai');
  const [baseUrl, setBaseUrl] = useState(props.provider?.baseUrl ?? '');
  const [credentials, setCredentials] = useState(props.provider?.credentialRefs.join(', ') ?? '');
  const save = useMutation({
    mutationFn: () => {
      const names = credentials
        .split(/[\s,]+/)
        .map((name) => name.trim())
        .filter(Boolean);
      return unwrap(
        client.PUT('/api/v1/admin/catalog/providers/{id}', {
          params: { path: { id: id.trim() } },
          body: {
            kind: kind as Schemas['PutProviderRequest']['kind'],
            baseUrl: baseUrl.trim(),
            credentialRef: names[0] ?? null,
            ...(names.length > 1 ? { credentialRefs: names } : {}),
          },
        }),
      );
    },
    onSuccess: () => props.onSaved(id.trim()),
  });
  return (
    <form
      className="stack catalog-form"
      aria-label={props.provider ? `Provider ${props.provider.id}` : 'New provider'}
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate();
      }}
    >
      <ErrorMessage error={save.error} fields={['kind', 'baseUrl', 'credentialRef', 'credentialRefs']} />
      {props.provider ? null : (
        <Field
          label="Provider id"
          name="id"
          value={id}
          onChange={setId}
          hint="Lower case letters, digits, dot, dash and underscore."
          required
        />
      )}
      <Field label="Kind" name="kind" error={save.error}>
        {(fieldId, describedBy) => (
          <select
            id={fieldId}
            aria-describedby={describedBy}
            value={kind}
            onChange={(e) => setKind(e.target.value)}
          >
            {PROVIDER_KINDS.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Base URL"
        name="baseUrl"
        error={save.error}
        value={baseUrl}
        onChange={setBaseUrl}
        required
      />
      <Field
        label="Credential names"
        name="credentialRef"
        error={save.error}
        value={credentials}
        onChange={setCredentials}
        hint="The names of the secrets (in SECRETS_FILE or the gateways' environment), never the secrets; several make a pool. Empty: none."
      />
      <Button type="submit" kind="primary" pending={save.isPending}>
        {props.provider ? 'Save provider' : 'Add provider'}
      </Button>
    </form>
  );
}

/** One real call through the provider, made by a gateway; the latency and what it answered. */
function ConnectionTest(props: { provider: Provider; model: string }) {
  const [model, setModel] = useState(props.model);
  const [result, setResult] = useState<TestResult | null>(null);
  const test = useMutation({
    mutationFn: () => {
      setResult(null);
      return unwrap(
        client.POST('/api/v1/admin/catalog/providers/{id}/test', {
          params: { path: { id: props.provider.id } },
          body: { upstreamModel: model.trim() },
        }),
      );
    },
    onSuccess: setResult,
  });
  return (
    <form
      className="row align-end connection-test"
      aria-label={`Test ${props.provider.id}`}
      onSubmit={(event) => {
        event.preventDefault();
        test.mutate();
      }}
    >
      <Field
        label={`Model to test on ${props.provider.id}`}
        name="upstreamModel"
        error={test.error}
        value={model}
        onChange={setModel}
        required
      />
      <Button type="submit" pending={test.isPending} label={`Test connection of ${props.provider.id}`}>
        Test connection
      </Button>
      <ErrorMessage error={test.error} fields={['upstreamModel']} />
      {result ? (
        <p
          className={`alert ${result.ok ? 'success' : 'error'}`}
          role="status"
          data-testid="connection-result"
        >
          {result.upstreamStatus === null
            ? `Not connected: ${result.answer}`
            : `${result.ok ? 'Connected' : 'Failed'}: HTTP ${result.upstreamStatus} in ${groupDigits(String(result.latencyMs))} ms${result.credential ? ` with ${result.credential}` : ''}. The provider answered: “${result.answer}”`}
        </p>
      ) : null}
    </form>
  );
}

function UpstreamFields(props: {
  index: number;
  upstream: Upstream;
  providers: Provider[];
  error: Parameters<typeof Field>[0]['error'];
  onChange: (upstream: Upstream) => void;
  onRemove: (() => void) | null;
}) {
  const { upstream, index } = props;
  const prefix = `upstreams.${index}`;
  const set = (change: Partial<Upstream>) => props.onChange({ ...upstream, ...change });
  return (
    <fieldset className="upstream-fields">
      <legend>Upstream {index + 1}</legend>
      <Field label="Provider" name={`${prefix}.providerId`} error={props.error}>
        {(fieldId, describedBy) => (
          <select
            id={fieldId}
            aria-describedby={describedBy}
            value={upstream.providerId}
            onChange={(e) => set({ providerId: e.target.value })}
          >
            <option value="">Choose…</option>
            {props.providers.map((provider) => (
              <option key={provider.id} value={provider.id}>
                {provider.id} ({provider.kind})
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Upstream model"
        name={`${prefix}.upstreamModel`}
        error={props.error}
        value={upstream.upstreamModel}
        onChange={(value) => set({ upstreamModel: value.trim() })}
      />
      <Field
        label="Priority"
        name={`${prefix}.priority`}
        error={props.error}
        inputMode="numeric"
        hint="0-100, lower first."
        value={String(upstream.priority)}
        onChange={(value) => set({ priority: toNumber(value) })}
      />
      <Field
        label="Weight"
        name={`${prefix}.weight`}
        error={props.error}
        inputMode="numeric"
        hint="1-1000: share within its priority."
        value={String(upstream.weight)}
        onChange={(value) => set({ weight: toNumber(value) })}
      />
      <Field
        label="Most calls at once"
        name={`${prefix}.maxConcurrency`}
        error={props.error}
        inputMode="numeric"
        hint="The provider's limit; empty: none."
        value={upstream.maxConcurrency ? String(upstream.maxConcurrency) : ''}
        onChange={(value) => set({ maxConcurrency: optionalNumber(value) })}
      />
      <Field
        label="Requests per minute"
        name={`${prefix}.requestsPerMinute`}
        error={props.error}
        inputMode="numeric"
        hint="The provider's limit; empty: none."
        value={upstream.requestsPerMinute ? String(upstream.requestsPerMinute) : ''}
        onChange={(value) => set({ requestsPerMinute: optionalNumber(value) })}
      />
      {props.onRemove ? (
        <Button label={`Remove upstream ${index + 1}`} onClick={props.onRemove}>
          Remove
        </Button>
      ) : null}
    </fieldset>
  );
}

function AliasForm(props: {
  alias: Alias | null;
  providers: Provider[];
  onSaved: (alias: string) => Promise<void>;
}) {
  const [alias, setAlias] = useState<Alias>(
    props.alias ?? {
      alias: '',
      protocols: ['chat_completions'],
      upstreams: [{ providerId: '', upstreamModel: '', priority: 0, weight: 1 }],
      published: false,
      price: null,
      maxOutputTokens: 4096,
      defaultMaxOutputTokens: 1024,
    },
  );
  const price = alias.price ?? NO_PRICE;
  const save = useMutation({
    mutationFn: () => putAlias(alias),
    onSuccess: () => props.onSaved(alias.alias.trim()),
  });
  const fields = [
    'protocols',
    'published',
    'maxOutputTokens',
    'defaultMaxOutputTokens',
    ...PRICE_PARTS.map(([part]) => `price.${part}`),
    ...alias.upstreams.flatMap((_, index) =>
      ['providerId', 'upstreamModel', 'priority', 'weight', 'maxConcurrency', 'requestsPerMinute'].map(
        (name) => `upstreams.${index}.${name}`,
      ),
    ),
  ];
  return (
    <form
      className="stack catalog-form"
      aria-label={props.alias ? `Alias ${props.alias.alias}` : 'New alias'}
      onSubmit={(event) => {
        event.preventDefault();
        save.mutate();
      }}
    >
      <ErrorMessage error={save.error} fields={fields} />
      {props.alias ? null : (
        <Field
          label="Alias"
          name="alias"
          value={alias.alias}
          onChange={(value) => setAlias({ ...alias, alias: value })}
          hint="The model name customers send."
          required
        />
      )}
      <fieldset>
        <legend>Protocols</legend>
        {PROTOCOLS.map(([protocol, label]) => (
          <label key={protocol} className="check">
            <input
              type="checkbox"
              checked={alias.protocols.includes(protocol)}
              onChange={(e) =>
                setAlias({
                  ...alias,
                  protocols: e.target.checked
                    ? [...alias.protocols, protocol]
                    : alias.protocols.filter((value) => value !== protocol),
                })
              }
            />{' '}
            {label}
          </label>
        ))}
      </fieldset>
      {alias.upstreams.map((upstream, index) => (
        <UpstreamFields
          // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity until saved
          key={index}
          index={index}
          upstream={upstream}
          providers={props.providers}
          error={save.error}
          onChange={(changed) =>
            setAlias({
              ...alias,
              upstreams: alias.upstreams.map((old, at) => (at === index ? changed : old)),
            })
          }
          onRemove={
            alias.upstreams.length > 1
              ? () => setAlias({ ...alias, upstreams: alias.upstreams.filter((_, at) => at !== index) })
              : null
          }
        />
      ))}
      <div>
        <Button
          onClick={() =>
            setAlias({
              ...alias,
              upstreams: [...alias.upstreams, { providerId: '', upstreamModel: '', priority: 0, weight: 1 }],
            })
          }
        >
          Add an upstream
        </Button>
      </div>
      <fieldset>
        <legend>Price in credits</legend>
        {PRICE_PARTS.map(([part, label]) => (
          <Field
            key={part}
            label={`Credits per ${label.toLowerCase()}`}
            name={`price.${part}`}
            error={save.error}
            inputMode="numeric"
            value={price[part]}
            onChange={(value) => setAlias({ ...alias, price: { ...price, [part]: value.trim() } })}
          />
        ))}
        <p className="hint">
          Leave input and output empty for an alias only packages pay for. Empty cache prices are the input
          price; an empty one-hour write price is the five-minute one.
        </p>
      </fieldset>
      <Field
        label="Default output tokens"
        name="defaultMaxOutputTokens"
        error={save.error}
        inputMode="numeric"
        value={String(alias.defaultMaxOutputTokens)}
        onChange={(value) => setAlias({ ...alias, defaultMaxOutputTokens: toNumber(value) })}
      />
      <Field
        label="Most output tokens"
        name="maxOutputTokens"
        error={save.error}
        inputMode="numeric"
        value={String(alias.maxOutputTokens)}
        onChange={(value) => setAlias({ ...alias, maxOutputTokens: toNumber(value) })}
      />
      <label className="check">
        <input
          type="checkbox"
          checked={alias.published}
          onChange={(e) => setAlias({ ...alias, published: e.target.checked })}
        />{' '}
        Published (keys may call it, it is listed in models and pricing)
      </label>
      <Button type="submit" kind="primary" pending={save.isPending}>
        {props.alias ? 'Save alias' : 'Add alias'}
      </Button>
    </form>
  );
}
