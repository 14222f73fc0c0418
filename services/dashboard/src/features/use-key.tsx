import { useState } from 'react';
import { useRead } from '../lib/query.ts';
import { Link } from '../lib/router.tsx';
import { Card, Page } from '../lib/ui.tsx';

function snippets(base: string, chatModel: string, messagesModel: string): Record<string, string> {
  return {
    'OpenAI SDK': `import OpenAI from 'openai';

const client = new OpenAI({ baseURL: '${base}/v1', apiKey: process.env.TOLLGATE_API_KEY });
const answer = await client.chat.completions.create({
  model: '${chatModel}',
  messages: [{ role: 'user', content: 'Hello' }],
});
console.log(answer.choices[0].message.content);`,
    'Anthropic SDK': `import Anthropic from '@anthropic-ai/sdk';

const client = new Anthropic({ baseURL: '${base}', apiKey: process.env.TOLLGATE_API_KEY });
const message = await client.messages.create({
  model: '${messagesModel}',
  max_tokens: 256,
  messages: [{ role: 'user', content: 'Hello' }],
});
console.log(message.content);`,
    curl: `curl ${base}/v1/chat/completions \\
  -H "Authorization: Bearer $TOLLGATE_API_KEY" \\
  -H 'content-type: application/json' \\
  -d '{"model":"${chatModel}","messages":[{"role":"user","content":"Hello"}]}'

# What is left on the key
curl ${base}/v1/key/status -H "Authorization: Bearer $TOLLGATE_API_KEY"`,
    'Claude Code': `export ANTHROPIC_BASE_URL=${base}
export ANTHROPIC_API_KEY=$TOLLGATE_API_KEY
claude --model ${messagesModel}`,
    Codex: `# ~/.codex/config.toml
model = "${chatModel}"
model_provider = "tollgate"

[model_providers.tollgate]
name = "Tollgate"
base_url = "${base}/v1"
env_key = "TOLLGATE_API_KEY"
wire_api = "responses"`,
  };
}

/** Base URLs and ready snippets; the key itself is never put in a snippet, only its variable. */
export function UseKeyScreen() {
  const status = useRead('/api/v1/status');
  const models = useRead('/api/v1/catalog/models');
  const base = (status.data?.gatewayUrl ?? location.origin).replace(/\/$/, '');
  const chatModel =
    models.data?.find((model) => model.protocols.includes('chat_completions'))?.alias ?? 'MODEL';
  const messagesModel = models.data?.find((model) => model.protocols.includes('messages'))?.alias ?? 'MODEL';
  const all = snippets(base, chatModel, messagesModel);
  const tabs = Object.keys(all);
  const [tab, setTab] = useState(tabs[0] ?? 'curl');
  const [copied, setCopied] = useState(false);
  return (
    <Page title="Use a key">
      <Card title="Base URLs">
        <dl className="facts">
          <div>
            <dt>OpenAI-style clients</dt>
            <dd>
              <code data-testid="openai-base">{base}/v1</code>
            </dd>
          </div>
          <div>
            <dt>Anthropic clients and Claude Code</dt>
            <dd>
              <code>{base}</code>
            </dd>
          </div>
        </dl>
        <p className="hint">
          Put your key in the <code>TOLLGATE_API_KEY</code> environment variable; create or copy one on the{' '}
          <Link to="/keys">API keys</Link> page.
        </p>
      </Card>
      <Card title="Snippets">
        <div role="tablist" aria-label="Client" className="tabs">
          {tabs.map((name) => (
            <button
              key={name}
              type="button"
              role="tab"
              id={`tab-${name}`}
              aria-selected={tab === name}
              aria-controls="snippet-panel"
              tabIndex={tab === name ? 0 : -1}
              onClick={() => {
                setTab(name);
                setCopied(false);
              }}
              onKeyDown={(event) => {
                const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
                if (!step) return;
                const next = tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length] ?? tab;
                setTab(next);
                document.getElementById(`tab-${next}`)?.focus();
              }}
            >
              {name}
            </button>
          ))}
        </div>
        <div role="tabpanel" id="snippet-panel" aria-labelledby={`tab-${tab}`}>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling snippet must be reachable by keyboard */}
          <pre tabIndex={0}>
            <code>{all[tab]}</code>
          </pre>
          <button
            type="button"
            className="button secondary"
            onClick={async () => {
              await navigator.clipboard.writeText(all[tab] ?? '');
              setCopied(true);
            }}
          >
            {copied ? 'Copied' : 'Copy snippet'}
          </button>
        </div>
      </Card>
    </Page>
  );
}
