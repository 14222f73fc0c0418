/**
 * Shared helpers of the gateway's service tests: one stack per file, requests, the checks every
 * refusal gets (status, body shape of its surface, code, nothing leaked) and ledger assertions.
 */
import { ERROR_CATALOG, ERROR_TYPES, type ServerErrorCode } from '@tollgate/errors';
import { afterAll, beforeAll, expect } from 'vitest';
import { PROVIDER_KEY, type StackOptions, startTestStack, type TestStack } from './stack.ts';

export interface Reply {
  path: string;
  status: number;
  headers: Headers;
  text: string;
}

export interface SendOptions {
  /** Sent as Authorization: Bearer unless `headers` say otherwise; null sends no credential. */
  secret?: string | null;
  headers?: Record<string, string>;
  /** Which gateway of the stack (default the first). */
  gateway?: number;
  /** Base URL other than the stack's gateways (an extra gateway started by the test). */
  baseUrl?: string;
}

type Funding = Parameters<TestStack['createFundedKey']>[0];
export type FundedKey = Awaited<ReturnType<TestStack['createFundedKey']>>;

const MESSAGES_STYLE_PATHS = new Set(['/v1/messages', '/v1/messages/count_tokens']);
const UPSTREAM_IDS = ['upstream-claude-x1', 'upstream-gpt-y2', 'upstream-gpt-hidden'];
const STACK_TRACE = [/\n\s+at\s/, /\bat [^\s]+ \(/, /node:internal/, /\.(?:ts|js|mjs):\d+/];

let tagCounter = 0;
/** A tag unique in this process, for the mock's per-tag counts and recordings. */
export function uniqueTag(prefix = 't'): string {
  tagCounter += 1;
  return `${prefix}${tagCounter}x${Date.now().toString(36)}`;
}

// biome-ignore lint/suspicious/noExplicitAny: protocol JSON read in assertions
export type Json = Record<string, any>;

/** The JSON payloads of an event stream's `data:` lines, `[DONE]` left out. */
export function sseData(text: string): Json[] {
  return text
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice(6),
    )
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as Json);
}

/** Input and output tokens as the caller's protocol reports them (Anthropic's input excludes cache). */
export function toldUsage(path: string, usage: Record<string, number>): { input: number; output: number } {
  if (path === '/v1/messages') {
    return {
      input:
        usage.input_tokens! + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0),
      output: usage.output_tokens!,
    };
  }
  if (path === '/v1/chat/completions')
    return { input: usage.prompt_tokens!, output: usage.completion_tokens! };
  return { input: usage.input_tokens!, output: usage.output_tokens! };
}

/** What a reply told its caller of input and output: its body's usage, or its stream's final usage event. */
export function usageOf(path: string, reply: Reply, stream: boolean): { input: number; output: number } {
  if (!stream) return toldUsage(path, (JSON.parse(reply.text) as { usage: Record<string, number> }).usage);
  const events = sseData(reply.text);
  if (path === '/v1/messages')
    return toldUsage(path, events.find((event) => event.type === 'message_delta')!.usage);
  if (path === '/v1/chat/completions')
    return toldUsage(path, events.find((event) => event.usage && event.choices.length === 0)!.usage);
  return toldUsage(path, events.find((event) => event.type === 'response.completed')!.response.usage);
}

/** A minimal valid body for a metered surface (or count_tokens) carrying mock directives. */
export function bodyFor(
  path: string,
  model: string,
  directives = '',
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const text = directives ? `hello @mock(${directives})` : 'hello';
  if (path === '/v1/responses') return { model, input: text, ...extra };
  if (path === '/v1/messages/count_tokens')
    return { model, messages: [{ role: 'user', content: text }], ...extra };
  return { model, max_tokens: 64, messages: [{ role: 'user', content: text }], ...extra };
}

/**
 * Starts a stack for the file (beforeAll) and checks it on the way out (afterAll): every queued
 * settlement delivered, the ledger consistent, and no client secret or provider key in any log line.
 */
export function useStack(label: string, options: StackOptions = {}) {
  const secrets: string[] = [];
  let current: TestStack | undefined;

  beforeAll(async () => {
    current = await startTestStack(label, options);
  });
  afterAll(async () => {
    if (!current) return;
    try {
      await current.settled();
      expect(await current.ledgerProblems()).toEqual([]);
      const logs = current.gatewayLogs.join('');
      expect(logs.length).toBeGreaterThan(0);
      for (const secret of [...secrets, PROVIDER_KEY]) expect(logs).not.toContain(secret);
    } finally {
      await current.close();
    }
  });

  const context = {
    get stack(): TestStack {
      if (!current) throw new Error('the stack is not started yet');
      return current;
    },
    /** Remembers a secret so that logs and error bodies are scanned for it. */
    remember(secret: string): void {
      secrets.push(secret);
    },
    async key(funding: Funding = {}): Promise<FundedKey> {
      const key = await context.stack.createFundedKey(funding);
      secrets.push(key.secret);
      return key;
    },
    async send(
      method: 'GET' | 'POST',
      path: string,
      body: unknown,
      options: SendOptions = {},
    ): Promise<Reply> {
      const base = options.baseUrl ?? context.stack.gateways[options.gateway ?? 0]!.server.url;
      const headers: Record<string, string> = {};
      if (options.secret) headers.authorization = `Bearer ${options.secret}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      Object.assign(headers, options.headers);
      const response = await fetch(`${base}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return {
        path: path.split('?')[0]!,
        status: response.status,
        headers: response.headers,
        text: await response.text(),
      };
    },
    post(path: string, secret: string | null, body: unknown, options: Omit<SendOptions, 'secret'> = {}) {
      return context.send('POST', path, body, { ...options, secret });
    },
    get(path: string, secret: string | null, options: Omit<SendOptions, 'secret'> = {}) {
      return context.send('GET', path, undefined, { ...options, secret });
    },
    /** Calls the mock has answered so far (every path, every tag). */
    upstreamCalls(): number {
      return context.stack.mock.stats().calls;
    },
    /** How many requests with this tag reached the mock. */
    tagged(tag: string): number {
      return context.stack.mock.stats().byTag[tag] ?? 0;
    },
    /**
     * Resolves with the first gateway log line (already written or still to come) that matches;
     * fails after `timeoutMs`. For effects that follow a request the client cannot see end.
     */
    waitForLog(matches: (line: string) => boolean, timeoutMs = 5_000): Promise<string> {
      const logs = context.stack.gatewayLogs;
      const seen = logs.find(matches);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const push = logs.push;
        // The give-up deadline, not a wait: the line resolves this as soon as it is written.
        const timer = setTimeout(() => {
          logs.push = push;
          reject(new Error('the expected gateway log line was not written'));
        }, timeoutMs);
        logs.push = (...lines: string[]) => {
          const length = push.apply(logs, lines);
          const hit = lines.find(matches);
          if (hit !== undefined) {
            clearTimeout(timer);
            logs.push = push;
            resolve(hit);
          }
          return length;
        };
      });
    },
    /** Fails if the text carries an upstream id, a provider name, a host, a credential or a trace. */
    expectNothingLeaked(text: string): void {
      const stack = context.stack;
      const hosts = [
        new URL(stack.mock.url).host,
        new URL(stack.controlPlane.internalServer.url).host,
        new URL(stack.controlPlane.publicServer.url).host,
        `:${stack.mock.port}`,
      ];
      for (const forbidden of [
        ...UPSTREAM_IDS,
        ...hosts,
        PROVIDER_KEY,
        ...secrets,
        'mock-anthropic',
        'mock-openai',
      ]) {
        expect(text, `body leaks ${forbidden}`).not.toContain(forbidden);
      }
      expect(text).not.toMatch(/anthropic|openai/i);
      for (const trace of STACK_TRACE) expect(text).not.toMatch(trace);
    },
    /**
     * Asserts a refusal: its status, the body shape of the path's surface (messages-style on
     * /v1/messages and count_tokens, openai-style elsewhere) with exactly the fields of
     * docs/behaviour.md, the code, an upstream-style type and nothing leaked. Returns the message.
     */
    expectError(reply: Reply, status: number, code: ServerErrorCode): string {
      expect({ status: reply.status, text: reply.text }).toMatchObject({ status });
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      const body = JSON.parse(reply.text) as Record<string, unknown>;
      let error: { type: unknown; message: unknown; code?: unknown; service_code?: unknown };
      if (MESSAGES_STYLE_PATHS.has(reply.path)) {
        expect(Object.keys(body).sort()).toEqual(['error', 'type']);
        expect(body.type).toBe('error');
        error = body.error as typeof error;
        expect(Object.keys(error).sort()).toEqual(['message', 'service_code', 'type']);
        expect(error.service_code).toBe(code);
      } else {
        expect(Object.keys(body)).toEqual(['error']);
        error = body.error as typeof error;
        expect(Object.keys(error).sort()).toEqual(['code', 'message', 'type']);
        expect(error.code).toBe(code);
      }
      expect(ERROR_TYPES).toContain(error.type);
      if (code !== 'upstream_rejected') expect(error.type).toBe(ERROR_CATALOG[code].type);
      expect(typeof error.message).toBe('string');
      expect((error.message as string).length).toBeGreaterThan(0);
      context.expectNothingLeaked(reply.text);
      return error.message as string;
    },
    /** Nothing reserved, charged or recorded for this account since it was funded. */
    async expectUntouched(key: FundedKey, funded: { credits?: bigint; tokens?: bigint }): Promise<void> {
      await context.stack.settled();
      expect(await context.stack.balances(key.accountId)).toEqual({
        tokens: funded.tokens ?? 0n,
        reservedTokens: 0n,
        credits: funded.credits ?? 0n,
        reservedCredits: 0n,
      });
      expect(await context.stack.reservations(key.accountId)).toEqual([]);
    },
  };
  return context;
}

export type StackContext = ReturnType<typeof useStack>;
