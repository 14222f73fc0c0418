import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { estimateInputTokens, estimateReservedInputTokens } from './count-tokens.ts';
import { readBase64ImageSize, readImageSize } from './image-size.ts';
import {
  ANTHROPIC_IMAGE_MAX_TOKENS,
  anthropicImageTokens,
  inlineDocumentTokens,
  OPENAI_IMAGE_MAX_TOKENS,
  openaiImageTokens,
  PDF_MAX_PAGES,
  PDF_PAGE_TOKENS,
  pdfPages,
  REFERENCED_DOCUMENT_TOKENS,
} from './media-tokens.ts';
import { ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS } from './messages-text.ts';

// Real image files of known dimensions, built here byte by byte.

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A complete, decodable greyscale PNG. */
function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(0, 9); // greyscale
  const rows = Buffer.alloc((width + 1) * height); // filter byte 0 + black pixels per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A GIF: header, logical screen descriptor, one empty frame, trailer. */
function gif(width: number, height: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  const frame = Buffer.alloc(10);
  frame.writeUInt8(0x2c, 0);
  frame.writeUInt16LE(width, 5);
  frame.writeUInt16LE(height, 7);
  return Buffer.concat([Buffer.from('GIF89a', 'latin1'), screen, frame, Buffer.from([0x02, 0x00, 0x3b])]);
}

/** A JPEG's marker structure: SOI, a JFIF APP0, an EXIF-sized APP1, DQT, SOF0, EOI. */
function jpeg(width: number, height: number): Buffer {
  const segment = (marker: number, payload: Buffer) => {
    const head = Buffer.from([0xff, marker, 0, 0]);
    head.writeUInt16BE(payload.length + 2, 2);
    return Buffer.concat([head, payload]);
  };
  const frame = Buffer.alloc(15);
  frame.writeUInt8(8, 0);
  frame.writeUInt16BE(height, 1);
  frame.writeUInt16BE(width, 3);
  frame.writeUInt8(3, 5);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, Buffer.from('JFIF\u0000\u0001\u0001\u0000\u0000\u0001\u0000\u0001\u0000\u0000', 'latin1')),
    segment(0xe1, Buffer.alloc(30_000, 7)),
    segment(0xdb, Buffer.alloc(65, 1)),
    segment(0xc0, frame),
    Buffer.from([0xff, 0xd9]),
  ]);
}

/** A lossless WebP header (VP8L): 14-bit width-1 and height-1 after the signature byte. */
function webpLossless(width: number, height: number): Buffer {
  const bits = Buffer.alloc(4);
  bits.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0);
  const chunk = Buffer.concat([
    Buffer.from('VP8L', 'latin1'),
    Buffer.from([5, 0, 0, 0, 0x2f]),
    bits,
    Buffer.alloc(1),
  ]);
  return Buffer.concat([Buffer.from('RIFF\u0000\u0000\u0000\u0000WEBP', 'latin1'), chunk]);
}

/** An extended WebP header (VP8X): 24-bit canvas width-1 and height-1. */
function webpExtended(width: number, height: number): Buffer {
  const canvas = Buffer.alloc(10);
  canvas.writeUIntLE(width - 1, 4, 3);
  canvas.writeUIntLE(height - 1, 7, 3);
  return Buffer.concat([
    Buffer.from('RIFF\u0000\u0000\u0000\u0000WEBPVP8X\u000a\u0000\u0000\u0000', 'latin1'),
    canvas,
  ]);
}

const dataUrl = (type: string, bytes: Buffer) => `data:image/${type};base64,${bytes.toString('base64')}`;

describe('reading image sizes', () => {
  it.each([
    ['png', png(300, 200)],
    ['gif', gif(300, 200)],
    ['jpeg', jpeg(300, 200)],
    ['webp lossless', webpLossless(300, 200)],
    ['webp extended', webpExtended(300, 200)],
  ])('reads %s', (_name, bytes) => {
    expect(readImageSize(bytes)).toEqual({ width: 300, height: 200 });
    expect(readBase64ImageSize(bytes.toString('base64'))).toEqual({ width: 300, height: 200 });
    expect(readBase64ImageSize(dataUrl('x', bytes))).toEqual({ width: 300, height: 200 });
  });

  it('answers null for what is not an image header', () => {
    expect(readBase64ImageSize('A'.repeat(1000))).toBeNull();
    expect(readBase64ImageSize('data:text/plain,hello')).toBeNull();
    expect(readBase64ImageSize(42)).toBeNull();
    expect(readImageSize(jpeg(300, 200).subarray(0, 400))).toBeNull();
  });
});

describe('Anthropic image tokens', () => {
  it('charges width x height / 750, scaled to a 1568 px long edge, at most about 1600', () => {
    expect(anthropicImageTokens({ width: 300, height: 200 })).toBe(80);
    expect(anthropicImageTokens({ width: 1000, height: 1000 })).toBe(1334);
    // 4000 x 500 fits 1568 x 196: 410 tokens, not the 2667 of the unscaled pixels.
    expect(anthropicImageTokens({ width: 4000, height: 500 })).toBe(410);
    expect(anthropicImageTokens({ width: 4000, height: 3000 })).toBe(ANTHROPIC_IMAGE_MAX_TOKENS);
    expect(anthropicImageTokens(null)).toBe(ANTHROPIC_IMAGE_MAX_TOKENS);
  });

  it('counts a base64 image of a messages request by its pixels, a URL image at the maximum', () => {
    const small = {
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: png(150, 100).toString('base64') },
    };
    const byUrl = { type: 'image', source: { type: 'url', url: 'https://example.test/cat.png' } };
    const base = estimateInputTokens('messages', { messages: [{ role: 'user', content: [] }] });
    expect(estimateInputTokens('messages', { messages: [{ role: 'user', content: [small] }] }) - base).toBe(
      20,
    );
    expect(estimateInputTokens('messages', { messages: [{ role: 'user', content: [byUrl] }] }) - base).toBe(
      ANTHROPIC_IMAGE_MAX_TOKENS,
    );
  });
});

describe('OpenAI image tokens', () => {
  it('charges 85 + 170 per 512 px tile after fitting 2048 and a 768 px short side; low detail 85', () => {
    expect(openaiImageTokens({ width: 300, height: 200 }, 'high')).toBe(85 + 170);
    expect(openaiImageTokens({ width: 1024, height: 1024 }, 'auto')).toBe(85 + 170 * 4); // -> 768 x 768
    expect(openaiImageTokens({ width: 2048, height: 4096 }, undefined)).toBe(85 + 170 * 6); // -> 768 x 1536
    expect(openaiImageTokens({ width: 4096, height: 4096 }, 'low')).toBe(85);
    expect(openaiImageTokens(null, 'high')).toBe(OPENAI_IMAGE_MAX_TOKENS);
    expect(OPENAI_IMAGE_MAX_TOKENS).toBe(85 + 170 * 8);
  });

  it('reads data URLs on chat completions and responses, and the detail beside them', () => {
    const image = dataUrl('jpeg', jpeg(1024, 1024));
    const chat = (part: unknown) =>
      estimateInputTokens('chat_completions', { messages: [{ role: 'user', content: [part] }] }) -
      estimateInputTokens('chat_completions', { messages: [{ role: 'user', content: [] }] });
    expect(chat({ type: 'image_url', image_url: { url: image } })).toBe(85 + 170 * 4);
    expect(chat({ type: 'image_url', image_url: { url: image, detail: 'low' } })).toBe(85);
    expect(chat({ type: 'image_url', image_url: { url: 'https://example.test/a.png' } })).toBe(
      OPENAI_IMAGE_MAX_TOKENS,
    );
    const responses = (part: unknown) =>
      estimateInputTokens('responses', { input: [{ role: 'user', content: [part] }] }) -
      estimateInputTokens('responses', { input: [{ role: 'user', content: [] }] });
    expect(responses({ type: 'input_image', image_url: image, detail: 'high' })).toBe(85 + 170 * 4);
    expect(responses({ type: 'input_image', file_id: 'file-1' })).toBe(OPENAI_IMAGE_MAX_TOKENS);
  });
});

describe('documents', () => {
  const pdf = (pages: number) =>
    Buffer.from(
      `%PDF-1.4\n1 0 obj << /Type /Pages /Count ${pages} >> endobj\n` +
        Array.from(
          { length: pages },
          (_, index) => `${index + 2} 0 obj <</Type/Page /Parent 1 0 R>> endobj\n`,
        ).join('') +
        '%%EOF',
      'latin1',
    );

  it('counts PDF pages, not the /Pages tree; falls back to size; caps at the provider maximum', () => {
    expect(pdfPages(pdf(3))).toBe(3);
    expect(pdfPages(Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(5_500)]))).toBe(6);
    expect(pdfPages(pdf(250))).toBe(PDF_MAX_PAGES);
  });

  it('reserves a PDF by its pages, other inline files by their size, referenced ones at the maximum', () => {
    expect(inlineDocumentTokens(pdf(3).toString('base64'))).toBe(3 * PDF_PAGE_TOKENS);
    expect(inlineDocumentTokens(`data:application/pdf;base64,${pdf(2).toString('base64')}`)).toBe(
      2 * PDF_PAGE_TOKENS,
    );
    expect(inlineDocumentTokens(Buffer.from('a,b,c\n1,2,3\n').toString('base64'))).toBe(12);
    const messages = (source: unknown) =>
      estimateInputTokens('messages', {
        messages: [{ role: 'user', content: [{ type: 'document', source }] }],
      }) - estimateInputTokens('messages', { messages: [{ role: 'user', content: [] }] });
    expect(messages({ type: 'base64', media_type: 'application/pdf', data: pdf(4).toString('base64') })).toBe(
      4 * PDF_PAGE_TOKENS,
    );
    expect(messages({ type: 'url', url: 'https://example.test/report.pdf' })).toBe(
      REFERENCED_DOCUMENT_TOKENS,
    );
    const chat = (file: unknown) =>
      estimateInputTokens('chat_completions', {
        messages: [{ role: 'user', content: [{ type: 'file', file }] }],
      }) - estimateInputTokens('chat_completions', { messages: [{ role: 'user', content: [] }] });
    expect(
      chat({ file_data: `data:application/pdf;base64,${pdf(5).toString('base64')}`, filename: 'a.pdf' }),
    ).toBe(5 * PDF_PAGE_TOKENS);
    expect(chat({ file_id: 'file-abc' })).toBe(REFERENCED_DOCUMENT_TOKENS);
  });
});

describe('per-call extras and the safety margin', () => {
  it("adds Anthropic's tool-use system prompt once when tools are present", () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const tool = { name: 't', input_schema: { type: 'object' } };
    const one = estimateInputTokens('messages', { messages, tools: [tool] });
    const two = estimateInputTokens('messages', { messages, tools: [tool, { ...tool, name: 'u' }] });
    const none = estimateInputTokens('messages', { messages });
    expect(one - none).toBeGreaterThan(ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS);
    expect(two - one).toBeLessThan(ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS);
  });

  it('reserves the estimate plus the margin, rounded up', () => {
    const body = { messages: [{ role: 'user', content: 'How many tokens is this?' }] };
    const estimate = estimateInputTokens('messages', body);
    expect(estimateReservedInputTokens('messages', body, 0)).toBe(estimate);
    expect(estimateReservedInputTokens('messages', body, 10)).toBe(Math.ceil(estimate * 1.1));
    expect(estimateReservedInputTokens('messages', body, 100)).toBe(estimate * 2);
  });
});
