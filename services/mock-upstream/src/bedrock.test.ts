import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, Hash, toUtf8 } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BEDROCK_MODEL, EXPIRED_SESSION_TOKEN_PREFIX } from './protocols/bedrock.ts';
import { type RunningMockUpstream, startMockUpstream } from './server.ts';

const SECRET = 'bedrock-secret-key';
let mock: RunningMockUpstream;
beforeAll(async () => {
  mock = await startMockUpstream({ expectedApiKey: SECRET });
});
afterAll(() => mock.close());

const MODEL_PATH = '/model/anthropic.claude-mock-v1%3A0';

async function signedPost(
  path: string,
  body: unknown,
  secret = SECRET,
  signing: { sessionToken?: string; signingDate?: Date } = {},
): Promise<Response> {
  const url = new URL(`${mock.url}${path}`);
  const text = JSON.stringify(body);
  const signer = new SignatureV4({
    service: 'bedrock',
    region: 'us-east-1',
    credentials: {
      accessKeyId: 'AKIDMOCK',
      secretAccessKey: secret,
      ...(signing.sessionToken ? { sessionToken: signing.sessionToken } : {}),
    },
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query: {},
      headers: { host: url.host, 'content-type': 'application/json' },
      body: text,
    },
    signing.signingDate ? { signingDate: signing.signingDate } : {},
  );
  const { host: _host, ...headers } = signed.headers;
  return fetch(url, { method: 'POST', headers, body: text });
}

function messages(content: string) {
  return {
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 100,
    messages: [{ role: 'user', content }],
  };
}

/** Decodes every frame (the codec checks both CRCs) into its headers and its chunk's event. */
async function frames(response: Response) {
  const bytes = Buffer.from(await response.arrayBuffer());
  const codec = new EventStreamCodec(toUtf8, fromUtf8);
  // biome-ignore lint/suspicious/noExplicitAny: provider JSON read in assertions
  const out: Array<{ type: unknown; event: Record<string, any> }> = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const message = codec.decode(bytes.subarray(at, at + length));
    at += length;
    const body = JSON.parse(toUtf8(message.body));
    out.push({
      type: message.headers[':message-type']?.value,
      event: body.bytes ? JSON.parse(Buffer.from(body.bytes, 'base64').toString()) : body,
    });
  }
  return out;
}

describe('Bedrock InvokeModel', () => {
  it("answers a signed call with Anthropic's message naming Anthropic's model", async () => {
    const response = await signedPost(
      `${MODEL_PATH}/invoke`,
      messages('Hi @mock(input_tokens=12,output_tokens=5)'),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      type: 'message',
      model: BEDROCK_MODEL,
      content: [{ type: 'text', text: 'Hello from the mock upstream.' }],
      usage: { input_tokens: 12, output_tokens: 5 },
    });
  });

  it('refuses another secret with 403, a Bedrock API key as Bearer is taken', async () => {
    const wrong = await signedPost(`${MODEL_PATH}/invoke`, messages('Hi'), 'another-secret');
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as { message: string }).message).toMatch(/signature/);
    const bearer = await fetch(`${mock.url}${MODEL_PATH}/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' },
      body: JSON.stringify(messages('Hi')),
    });
    expect(bearer.status).toBe(200);
  });

  it('refuses a right signature made with an expired session token or dated over 5 minutes away', async () => {
    const path = `${MODEL_PATH}/invoke`;
    const live = await signedPost(path, messages('Hi'), SECRET, { sessionToken: 'sts-token' });
    expect(live.status).toBe(200);
    const expired = await signedPost(path, messages('Hi'), SECRET, {
      sessionToken: `${EXPIRED_SESSION_TOKEN_PREFIX}sts-token`,
    });
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as { message: string }).message).toMatch(/security token .* expired/);
    const late = await signedPost(path, messages('Hi'), SECRET, {
      signingDate: new Date(Date.now() - 6 * 60_000),
    });
    expect(late.status).toBe(403);
    expect(((await late.json()) as { message: string }).message).toMatch(/^Signature expired/);
    const slightlyOff = await signedPost(path, messages('Hi'), SECRET, {
      signingDate: new Date(Date.now() - 4 * 60_000),
    });
    expect(slightlyOff.status).toBe(200);
  });

  it('refuses a body with model or stream, or without its anthropic_version', async () => {
    for (const body of [
      { ...messages('Hi'), model: 'x' },
      { ...messages('Hi'), stream: true },
      { ...messages('Hi'), anthropic_version: '2023-06-01' },
    ]) {
      const response = await signedPost(`${MODEL_PATH}/invoke`, body);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(/^Malformed input request/);
    }
  });

  it('throttles with 429 and its message', async () => {
    const response = await signedPost(`${MODEL_PATH}/invoke`, messages('Hi @mock(status=429)'));
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual({ message: 'Too many requests, please wait before trying again.' });
  });
});

describe('Bedrock InvokeModelWithResponseStream', () => {
  it('frames Anthropic events as chunk events with valid CRCs and invocation metrics last', async () => {
    const response = await signedPost(
      `${MODEL_PATH}/invoke-with-response-stream`,
      messages('Hi @mock(words=2,input_tokens=20,output_tokens=2,cache_read=4)'),
    );
    expect(response.headers.get('content-type')).toBe('application/vnd.amazon.eventstream');
    const decoded = await frames(response);
    expect(decoded.every((frame) => frame.type === 'event')).toBe(true);
    const types = decoded.map((frame) => frame.event.type);
    expect([types[0], types.at(-2), types.at(-1)]).toEqual([
      'message_start',
      'message_delta',
      'message_stop',
    ]);
    expect(types.filter((type) => type === 'content_block_delta')).toHaveLength(2);
    expect(decoded[0]!.event.message.model).toBe(BEDROCK_MODEL);
    expect(decoded.at(-1)!.event['amazon-bedrock-invocationMetrics']).toMatchObject({
      inputTokenCount: 20,
      outputTokenCount: 2,
      cacheReadInputTokenCount: 4,
    });
  });

  it('ends a stream_error stream with a modelStreamErrorException frame', async () => {
    const response = await signedPost(
      `${MODEL_PATH}/invoke-with-response-stream`,
      messages('Hi @mock(stream_error)'),
    );
    const decoded = await frames(response);
    expect(decoded.at(-1)).toMatchObject({
      type: 'exception',
      event: { message: 'The model stream failed.' },
    });
  });
});
