import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/core/serde';
import type { GatewayProvider } from '@tollgate/schemas';
import { describe, expect, it } from 'vitest';
import type { StreamEventVerdict, UpstreamTarget } from '../types.ts';
import { plainUsage } from '../types.ts';
import { BEDROCK_ANTHROPIC_VERSION, bedrockAdapter, regionOf, signRequest } from './bedrock-adapter.ts';
import { getAdapter } from './index.ts';

/** AWS's published SigV4 test suite: its credentials, scope and time. */
const SUITE = {
  keyPair: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  region: 'us-east-1',
  service: 'service',
  at: new Date('2015-08-30T12:36:00Z'),
};
const SCOPE = 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';

describe('SigV4 signing against AWS test suite vectors', () => {
  const sign = (method: string, url: string, headers: Record<string, string> = {}, body = '') =>
    signRequest({ ...SUITE, method, url, headers, body });

  it('get-vanilla', async () => {
    const headers = await sign('GET', 'https://example.amazonaws.com/');
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.authorization).toBe(
      `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31`,
    );
  });

  it('get-vanilla-query-order-key-case', async () => {
    const headers = await sign('GET', 'https://example.amazonaws.com/?Param2=value2&Param1=value1');
    expect(headers.authorization).toBe(
      `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500`,
    );
  });

  it('post-vanilla', async () => {
    const headers = await sign('POST', 'https://example.amazonaws.com/');
    expect(headers.authorization).toBe(
      `${SCOPE}, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`,
    );
  });

  it('post-x-www-form-urlencoded', async () => {
    const headers = await sign(
      'POST',
      'https://example.amazonaws.com/',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'Param1=value1',
    );
    expect(headers.authorization).toBe(
      `${SCOPE}, SignedHeaders=content-type;host;x-amz-date, Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a`,
    );
  });

  it('signs the session token and never returns host', async () => {
    const headers = await signRequest({
      ...SUITE,
      keyPair: { ...SUITE.keyPair, sessionToken: 'token-1' },
      url: 'https://example.amazonaws.com/',
      headers: {},
      body: '',
    });
    expect(headers['x-amz-security-token']).toBe('token-1');
    expect(headers.authorization).toContain('SignedHeaders=host;x-amz-date;x-amz-security-token');
    expect(headers).not.toHaveProperty('host');
  });
});

const KEY_PAIR = JSON.stringify({ accessKeyId: 'AKIDTEST', secretAccessKey: 'secret-test' });

function target(baseUrl: string, credential: string | null): UpstreamTarget {
  const provider: GatewayProvider = { id: 'prov_br', kind: 'bedrock', baseUrl, credentialRef: null };
  return { provider, credential, upstreamModel: 'anthropic.claude-sonnet-4-v1:0', alias: 'claude-bedrock' };
}

describe('bedrock adapter: request', () => {
  const base = 'https://bedrock-runtime.eu-west-3.amazonaws.com';

  it('is the adapter of its kind and speaks messages', () => {
    expect(getAdapter('bedrock')).toBe(bedrockAdapter);
    expect(bedrockAdapter.surfaces).toEqual(['messages']);
  });

  it('puts the model in the URL and turns the messages body into Bedrock’s', () => {
    const body = JSON.stringify({ model: 'x', stream: true, max_tokens: 5, messages: [] });
    for (const stream of [false, true]) {
      const request = bedrockAdapter.buildRequest({
        target: target(base, KEY_PAIR),
        surface: 'messages',
        clientHeaders: new Headers({ 'anthropic-beta': 'a-1, b-2', 'x-api-key': 'sk-client' }),
        stream,
        body,
      });
      expect(request.url).toBe(
        `${base}/model/anthropic.claude-sonnet-4-v1%3A0/${stream ? 'invoke-with-response-stream' : 'invoke'}`,
      );
      expect(JSON.parse(request.body!)).toEqual({
        anthropic_version: BEDROCK_ANTHROPIC_VERSION,
        max_tokens: 5,
        messages: [],
        anthropic_beta: ['a-1', 'b-2'],
      });
      expect(request.headers).toEqual({
        'content-type': 'application/json',
        accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json',
      });
    }
  });

  it('signs with a key pair for the region of the host, or sends an API key as Bearer', async () => {
    const built = bedrockAdapter.buildRequest({
      target: target(base, KEY_PAIR),
      surface: 'messages',
      clientHeaders: new Headers(),
      body: '{}',
    });
    const signed = await bedrockAdapter.authorize!({ ...built, body: built.body! }, target(base, KEY_PAIR));
    expect(signed.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-3\/bedrock\/aws4_request, SignedHeaders=accept;content-type;host;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    const apiKey = bedrockAdapter.buildRequest({
      target: target(base, 'ABSKbedrock-api-key'),
      surface: 'messages',
      clientHeaders: new Headers(),
      body: '{}',
    });
    expect(apiKey.headers.authorization).toBe('Bearer ABSKbedrock-api-key');
  });

  it('finds the region in the host, else in the credential, else refuses to sign', () => {
    const pair = { accessKeyId: 'a', secretAccessKey: 'b' };
    expect(regionOf('https://bedrock-runtime.us-west-2.amazonaws.com', pair)).toBe('us-west-2');
    expect(regionOf('https://bedrock-runtime-fips.us-east-1.amazonaws.com', pair)).toBe('us-east-1');
    expect(regionOf('http://127.0.0.1:8090', { ...pair, region: 'ap-south-1' })).toBe('ap-south-1');
    expect(() => regionOf('http://127.0.0.1:8090', pair)).toThrow(/region/);
  });
});

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function chunk(event: Record<string, unknown>): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: 'chunk' },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'event' },
    },
    body: fromUtf8(JSON.stringify({ bytes })),
  });
}

function exception(type: string): Uint8Array {
  return codec.encode({
    headers: {
      ':exception-type': { type: 'string', value: type },
      ':content-type': { type: 'string', value: 'application/json' },
      ':message-type': { type: 'string', value: 'exception' },
    },
    body: fromUtf8(JSON.stringify({ message: 'Stream error at Acme 10.0.0.1' })),
  });
}

const METRICS = {
  'amazon-bedrock-invocationMetrics': {
    inputTokenCount: 30,
    outputTokenCount: 9,
    invocationLatency: 100,
    firstByteLatency: 50,
    cacheReadInputTokenCount: 5,
    cacheWriteInputTokenCount: 0,
  },
};

const STREAM = [
  chunk({
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-20250514',
      content: [],
      usage: { input_tokens: 30, cache_read_input_tokens: 5, output_tokens: 1 },
    },
  }),
  chunk({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
  chunk({ type: 'content_block_stop', index: 0 }),
  chunk({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }),
  chunk({ type: 'message_stop', ...METRICS }),
];

function feed(frames: Uint8Array[], split: number) {
  const bytes = Buffer.concat(frames);
  const decoder = bedrockAdapter.streamFraming!.createDecoder();
  const tracker = bedrockAdapter.createStreamUsageTracker('messages');
  const events = [];
  for (let at = 0; at < bytes.length; at += split)
    events.push(...decoder.push(bytes.subarray(at, at + split)));
  events.push(...decoder.flush());
  const verdicts: StreamEventVerdict[] = events.map((event) => tracker.observe(event));
  return { events, verdicts, usage: tracker.usage() };
}

describe('bedrock adapter: event stream', () => {
  it('decodes chunk events in any chunking and reads usage from message_start and message_delta', () => {
    for (const split of [1, 7, 100, 100_000]) {
      const { events, verdicts, usage } = feed(STREAM, split);
      expect(events.map((event) => event.event)).toEqual([
        'message_start',
        'content_block_start',
        'content_block_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ]);
      expect(verdicts.at(-1)).toBe('terminal');
      expect(usage).toEqual({ ...plainUsage(30n, 9n), cacheReadTokens: 5n });
    }
  });

  it('relays the events as SSE without Bedrock’s invocation metrics', () => {
    const { events } = feed(STREAM, 100_000);
    expect(events[2]!.raw).toBe(
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
    );
    expect(events.at(-1)!.raw).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it('falls back to the invocation metrics when message_delta carried no usage', () => {
    const frames = [...STREAM];
    frames[4] = chunk({ type: 'message_delta', delta: { stop_reason: 'end_turn' } });
    expect(feed(frames, 64).usage).toEqual({ ...plainUsage(30n, 9n), cacheReadTokens: 5n });
  });

  it('turns a modelStreamErrorException into a provider error, and a bad CRC into an invalid event', () => {
    const { verdicts, events } = feed([...STREAM.slice(0, 3), exception('modelStreamErrorException')], 50);
    expect(verdicts).toEqual(['pass', 'pass', 'pass', 'provider_error']);
    expect(events.at(-1)!.data).not.toContain('Acme');
    const broken = Buffer.from(STREAM[2]!);
    broken.writeUInt8(broken.readUInt8(broken.length - 10) ^ 0xff, broken.length - 10);
    expect(feed([STREAM[0]!, broken], 1000).verdicts).toEqual(['pass', 'invalid']);
  });
});
