import { decodeBase64Prefix, type ImageSize } from './image-size.ts';

/*
 * Input tokens of images and documents by the providers' published rules, as upper bounds: the
 * reservation must cover what the provider will bill. Where the size cannot be known locally (an
 * image or document by URL or file id, an unreadable header), the provider's maximum is assumed.
 *
 * Anthropic (docs "Vision"): an image whose long edge is over 1568 px is scaled down to fit; it
 * then costs width * height / 750 tokens, and images are scaled down until they cost at most about
 * 1,600 tokens. PDFs (docs "PDF support"): each page is sent as text (typically 1,500-3,000 tokens)
 * plus an image of the page; at most 100 pages per request.
 * OpenAI (docs "Images and vision", GPT-4o family): detail "low" costs 85 tokens; otherwise the
 * image is scaled to fit 2048 x 2048, then down so its short side is at most 768 px, and costs 85
 * plus 170 per 512 px tile ("auto" may choose high, so it is counted as high). PDFs as files: the
 * text and an image of each page, at most 100 pages.
 */

export const ANTHROPIC_IMAGE_MAX_EDGE = 1_568;
export const ANTHROPIC_PIXELS_PER_TOKEN = 750;
export const ANTHROPIC_IMAGE_MAX_TOKENS = 1_600;

export const OPENAI_IMAGE_FIT = 2_048;
export const OPENAI_IMAGE_SHORT_SIDE = 768;
export const OPENAI_TILE = 512;
export const OPENAI_IMAGE_BASE_TOKENS = 85;
export const OPENAI_TILE_TOKENS = 170;
/** Most tiles an image can take at high detail: short side 768 (2 tiles) by long side 2048 (4). */
export const OPENAI_IMAGE_MAX_TOKENS = OPENAI_IMAGE_BASE_TOKENS + OPENAI_TILE_TOKENS * 8;

/** Per PDF page: the top of the documented text range plus the page's image at the largest size. */
export const PDF_PAGE_TOKENS = 3_000 + ANTHROPIC_IMAGE_MAX_TOKENS;
/** Most pages a provider reads from the PDFs of one request; more is refused, so never billed. */
export const PDF_MAX_PAGES = 100;
/** A PDF whose pages cannot be counted is taken to have a page per this many bytes (capped). */
export const PDF_BYTES_PER_PAGE = 1_000;
/** A PDF or file given by URL or file id: its size is unknown here, so the most a request may carry. */
export const REFERENCED_DOCUMENT_TOKENS = PDF_PAGE_TOKENS * PDF_MAX_PAGES;

export function anthropicImageTokens(size: ImageSize | null): number {
  if (!size) return ANTHROPIC_IMAGE_MAX_TOKENS;
  const scale = Math.min(1, ANTHROPIC_IMAGE_MAX_EDGE / Math.max(size.width, size.height));
  const pixels = Math.ceil(size.width * scale) * Math.ceil(size.height * scale);
  return Math.min(ANTHROPIC_IMAGE_MAX_TOKENS, Math.max(1, Math.ceil(pixels / ANTHROPIC_PIXELS_PER_TOKEN)));
}

export function openaiImageTokens(size: ImageSize | null, detail: unknown): number {
  if (detail === 'low') return OPENAI_IMAGE_BASE_TOKENS;
  if (!size) return OPENAI_IMAGE_MAX_TOKENS;
  const fit = Math.min(1, OPENAI_IMAGE_FIT / Math.max(size.width, size.height));
  const width = size.width * fit;
  const height = size.height * fit;
  const shrink = Math.min(1, OPENAI_IMAGE_SHORT_SIDE / Math.min(width, height));
  const tiles = Math.ceil((width * shrink) / OPENAI_TILE) * Math.ceil((height * shrink) / OPENAI_TILE);
  return OPENAI_IMAGE_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles;
}

/**
 * Pages of a PDF: its page objects (`/Type /Page`) when they are readable, else one page per
 * PDF_BYTES_PER_PAGE (page objects can sit in compressed object streams); at most PDF_MAX_PAGES.
 */
export function pdfPages(bytes: Buffer): number {
  let pages = 0;
  let offset = bytes.indexOf('/Type');
  while (offset >= 0) {
    let next = offset + 5;
    while (next < bytes.length && (bytes[next] === 0x20 || bytes[next] === 0x0a || bytes[next] === 0x0d))
      next += 1;
    if (bytes.toString('latin1', next, next + 5) === '/Page' && bytes[next + 5] !== 0x73 /* s */) pages += 1;
    offset = bytes.indexOf('/Type', next);
  }
  if (pages === 0) pages = Math.ceil(bytes.length / PDF_BYTES_PER_PAGE);
  return Math.max(1, Math.min(PDF_MAX_PAGES, pages));
}

/**
 * Tokens of a document or file sent inline as base64: a PDF by its pages; any other file by its
 * size (a token is at least a byte of text). Unreadable data counts as a referenced document.
 */
export function inlineDocumentTokens(base64: unknown): number {
  if (typeof base64 !== 'string') return REFERENCED_DOCUMENT_TOKENS;
  const bytes = decodeBase64Prefix(base64, Number.MAX_SAFE_INTEGER);
  if (!bytes || bytes.length === 0) return REFERENCED_DOCUMENT_TOKENS;
  if (bytes.toString('latin1', 0, 5) === '%PDF-') return pdfPages(bytes) * PDF_PAGE_TOKENS;
  return bytes.length;
}

/** Applies the safety margin (whole per cent) to an input estimate, rounding up. */
export function withMargin(tokens: number, marginPercent: number): number {
  return Math.ceil((tokens * (100 + marginPercent)) / 100);
}
