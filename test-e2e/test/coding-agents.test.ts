/**
 * The coding agents, unchanged, on an alias whose provider speaks another protocol: Claude Code
 * (`claude -p`, `ANTHROPIC_BASE_URL` at the gateway) on an OpenAI-kind alias, and Codex
 * (`codex exec`, a custom provider with `wire_api = "responses"`) on an Anthropic-kind alias.
 * Each runs headless against 127.0.0.1 only, in a folder of its own with a home of its own; the
 * mock asks for one call of a harmless tool (`@mock(tool_name=...)`) and answers once the agent
 * sent the tool's result back. Every call the agent made is settled from the upstream's usage.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mockRequests } from '../src/clients.ts';
import { signUpCustomer } from '../src/customer.ts';
import { closeCheckingLedger, expectSettledInCredits, Meter } from '../src/ledger.ts';
import { type E2EStack, PRICES, startStack, UPSTREAM_MODELS } from '../src/stack.ts';

const require = createRequire(import.meta.url);
/** Claude Code's package ships a launcher that finds the platform binary (its postinstall is off). */
const CLAUDE = path.join(
  path.dirname(require.resolve('@anthropic-ai/claude-code/package.json')),
  'cli-wrapper.cjs',
);
const CODEX = path.join(path.dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
/** An agent that has not finished by then failed: the test must not hang on it. */
const AGENT_DEADLINE_MS = 90_000;

let stack: E2EStack;
let meter: Meter;
let secret: string;
let folder: string;

beforeAll(async () => {
  stack = await startStack('coding-agents', { anyProtocol: true });
  const customer = await signUpCustomer(stack, { credits: 100_000_000n });
  ({ secret } = await customer.createKey({ name: 'coding agents' }));
  meter = new Meter(stack, customer.accountId);
  folder = await mkdtemp(path.join(tmpdir(), 'tollgate-agents-'));
});

beforeEach(() => meter.mark());

afterAll(async () => {
  await closeCheckingLedger(stack);
  await rm(folder, { recursive: true, force: true });
});

interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an agent to its end (or kills it at the deadline) with only the given environment. */
function runAgent(command: string[], cwd: string, env: Record<string, string>): Promise<AgentRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, command, {
      cwd,
      env: { PATH: process.env.PATH ?? '', LANG: 'C.UTF-8', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    // The give-up deadline for the agent, not a wait: its exit ends it at once.
    const timer = setTimeout(() => child.kill('SIGKILL'), AGENT_DEADLINE_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function workspace(name: string): Promise<{ cwd: string; home: string }> {
  const cwd = path.join(folder, name, 'work');
  const home = path.join(folder, name, 'home');
  await mkdir(cwd, { recursive: true });
  await mkdir(home, { recursive: true });
  await writeFile(path.join(cwd, 'README.md'), '# A project the agent may look at\n');
  return { cwd, home };
}

/** The recorded upstream bodies of one tagged run, parsed. */
async function upstreamBodies(tag: string) {
  const requests = await mockRequests(stack.mockUrl, tag);
  // biome-ignore lint/suspicious/noExplicitAny: the provider's own request shape
  return requests.map((request) => ({ path: request.path, body: JSON.parse(request.body) as any }));
}

describe('coding agents through the gateway', () => {
  it('Claude Code (claude -p) completes a tool turn on an OpenAI-kind alias', {
    timeout: 120_000,
  }, async () => {
    const tag = `claude-code-${Date.now()}`;
    const { cwd, home } = await workspace('claude-code');
    const run = await runAgent(
      [
        CLAUDE,
        '-p',
        `Find the tools for notebooks. @mock(tool_name=ToolSearch,thinking,tag=${tag},input_tokens=900,output_tokens=20)`,
        '--model',
        'gpt-any-e2e',
        '--output-format',
        'json',
        '--max-turns',
        '4',
      ],
      cwd,
      {
        HOME: home,
        CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
        ANTHROPIC_BASE_URL: stack.gatewayUrl,
        ANTHROPIC_API_KEY: secret,
        ANTHROPIC_SMALL_FAST_MODEL: 'gpt-any-e2e',
        ANTHROPIC_DEFAULT_HAIKU_MODEL: 'gpt-any-e2e',
        ANTHROPIC_DEFAULT_SONNET_MODEL: 'gpt-any-e2e',
        ANTHROPIC_DEFAULT_OPUS_MODEL: 'gpt-any-e2e',
        // Only the gateway: no telemetry, error reports, update checks or other traffic.
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        DISABLE_AUTOUPDATER: '1',
      },
    );
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ is_error: false, num_turns: 2, terminal_reason: 'completed' });
    expect(result.result).toMatch(/^Hello from the mock upstream\./);
    // What the agent was told it used is what the ledger charges: two calls of 900 in, 20 out.
    expect(result.usage).toMatchObject({ input_tokens: 1800, output_tokens: 40 });

    // It asked the OpenAI upstream twice: the call, then with the tool's result.
    const [first, second, ...more] = await upstreamBodies(tag);
    expect(more).toEqual([]);
    expect([first?.path, second?.path]).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
    expect(first?.body.model).toBe(UPSTREAM_MODELS.gpt);
    // Its adaptive thinking asked for reasoning; the reasoning shown to it carried no proof, so
    // none of it went upstream again.
    expect(first?.body.reasoning_effort).toBe('high');
    expect(JSON.stringify(second?.body.messages)).not.toContain('The mock considers');
    const call = second?.body.messages.at(-2).tool_calls[0];
    expect(call.function.name).toBe('ToolSearch');
    expect(second?.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: call.id });

    const rows = await meter.finished(2);
    for (const row of rows) {
      expect(row).toMatchObject({ alias: 'gpt-any-e2e', surface: 'messages' });
      expectSettledInCredits(row, PRICES['gpt-any-e2e'], { input: 900, output: 20 });
    }
  });

  /** A Codex home whose config names the gateway as a custom Responses provider. */
  async function codexWorkspace(name: string, options: { websockets: boolean }) {
    const { cwd, home } = await workspace(name);
    const codexHome = path.join(home, '.codex');
    await mkdir(codexHome, { recursive: true });
    await writeFile(
      path.join(codexHome, 'config.toml'),
      [
        'model = "claude-any-e2e"',
        'model_provider = "tollgate"',
        // OpenAI's hosted search cannot run at another provider (docs/translation.md).
        'web_search = "disabled"',
        'model_reasoning_effort = "high"',
        '[model_providers.tollgate]',
        'name = "tollgate"',
        `base_url = "${stack.gatewayUrl}/v1"`,
        'env_key = "TOLLGATE_API_KEY"',
        'wire_api = "responses"',
        ...(options.websockets ? ['supports_websockets = true'] : ['supports_websockets = false']),
        '',
      ].join('\n'),
    );
    return { cwd, home, codexHome };
  }

  it('Codex (codex exec) completes a tool turn on an Anthropic-kind alias', {
    timeout: 120_000,
  }, async () => {
    const tag = `codex-${Date.now()}`;
    const { cwd, home, codexHome } = await codexWorkspace('codex', { websockets: false });
    const run = await runAgent(
      [
        CODEX,
        'exec',
        '--skip-git-repo-check',
        `Show me the logo. @mock(tool_name=view_image,thinking,tag=${tag},input_tokens=700,output_tokens=30)`,
      ],
      cwd,
      { HOME: home, CODEX_HOME: codexHome, TOLLGATE_API_KEY: secret },
    );
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/^Hello from the mock upstream\./);

    // It asked the Anthropic upstream twice: the call, then with the tool's result.
    const [first, second, ...more] = await upstreamBodies(tag);
    expect(more).toEqual([]);
    expect([first?.path, second?.path]).toEqual(['/v1/messages', '/v1/messages']);
    expect(first?.body.model).toBe(UPSTREAM_MODELS.claude);
    // Its reasoning effort became a thinking budget, and the thinking block the provider signed
    // came back to it (sealed for Codex as encrypted_content) with its own signature.
    expect(first?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 });
    const assistant = second?.body.messages.at(-2).content;
    expect(assistant[0]).toMatchObject({
      type: 'thinking',
      thinking: 'The mock considers the request.',
      signature: expect.stringMatching(/^mocksig_/),
    });
    const call = assistant.find((block: { type: string }) => block.type === 'tool_use');
    expect(call.name).toBe('view_image');
    const answer = second?.body.messages.at(-1);
    expect(answer.role).toBe('user');
    expect(answer.content).toContainEqual(
      expect.objectContaining({ type: 'tool_result', tool_use_id: call.id }),
    );

    const rows = await meter.finished(2);
    for (const row of rows) {
      expect(row).toMatchObject({ alias: 'claude-any-e2e', surface: 'responses' });
      expectSettledInCredits(row, PRICES['claude-any-e2e'], { input: 700, output: 30 });
    }
  });

  it('Codex with WebSockets allowed falls back to HTTP at once', { timeout: 120_000 }, async () => {
    const tag = `codex-ws-${Date.now()}`;
    const { cwd, home, codexHome } = await codexWorkspace('codex-ws', { websockets: true });
    const started = Date.now();
    const run = await runAgent(
      [CODEX, 'exec', '--skip-git-repo-check', `Hello. @mock(tag=${tag},input_tokens=50,output_tokens=5)`],
      cwd,
      { HOME: home, CODEX_HOME: codexHome, TOLLGATE_API_KEY: secret },
    );
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/^Hello from the mock upstream\./);
    // One refused upgrade and straight to HTTP: no reconnection attempts.
    expect(run.stderr).not.toMatch(/Reconnecting/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const rows = await meter.finished(1);
    expectSettledInCredits(rows[0]!, PRICES['claude-any-e2e'], { input: 50, output: 5 });
  });
});
