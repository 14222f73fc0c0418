/*
 * Width and height of an image from the first bytes of its file (PNG, JPEG, GIF, WebP), so the
 * input estimate can follow the provider's per-image rules instead of a guess. Only a bounded
 * prefix of a base64 payload is decoded: every format here keeps its size in the header, and a
 * JPEG's frame header comes after its metadata segments, which fit in that prefix in practice.
 * Anything unreadable answers null and the caller assumes the provider's largest image.
 */

export interface ImageSize {
  width: number;
  height: number;
}

/** Base64 characters decoded at most per image (about 768 KB of file). */
export const IMAGE_HEADER_BASE64_CHARS = 1_048_576;

/** The bytes of a base64 payload's prefix (a `data:` URL or bare base64); null when it is neither. */
export function decodeBase64Prefix(value: string, maxChars: number): Buffer | null {
  let data = value;
  if (data.startsWith('data:')) {
    const comma = data.indexOf(',');
    if (comma < 0 || !data.slice(0, comma).endsWith(';base64')) return null;
    data = data.slice(comma + 1);
  }
  const length = Math.min(data.length, maxChars - (maxChars % 4));
  return Buffer.from(data.slice(0, length), 'base64');
}

function png(bytes: Buffer): ImageSize | null {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length < 24 || signature.some((byte, index) => bytes[index] !== byte)) return null;
  if (bytes.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

function gif(bytes: Buffer): ImageSize | null {
  const header = bytes.toString('latin1', 0, 6);
  if (bytes.length < 10 || (header !== 'GIF87a' && header !== 'GIF89a')) return null;
  return { width: bytes.readUInt16LE(6), height: bytes.readUInt16LE(8) };
}

function webp(bytes: Buffer): ImageSize | null {
  if (bytes.length < 16 || bytes.toString('latin1', 0, 4) !== 'RIFF') return null;
  if (bytes.toString('latin1', 8, 12) !== 'WEBP') return null;
  const chunk = bytes.toString('latin1', 12, 16);
  if (chunk === 'VP8 ') {
    if (bytes.length < 30 || bytes[23] !== 0x9d || bytes[24] !== 0x01 || bytes[25] !== 0x2a) return null;
    return { width: bytes.readUInt16LE(26) & 0x3fff, height: bytes.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    if (bytes.length < 25 || bytes[20] !== 0x2f) return null;
    const bits = bytes.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && bytes.length >= 30) {
    return { width: bytes.readUIntLE(24, 3) + 1, height: bytes.readUIntLE(27, 3) + 1 };
  }
  return null;
}

/** Start-of-frame markers (C0-CF without DHT C4, JPG C8 and DAC CC) hold the frame's size. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpeg(bytes: Buffer): ImageSize | null {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  let offset = 2;
  while (offset + 9 < bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1] as number;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (isStartOfFrame(marker)) {
      return { width: bytes.readUInt16BE(offset + 7), height: bytes.readUInt16BE(offset + 5) };
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end of image or scan data before a frame
    offset += 2 + bytes.readUInt16BE(offset + 2);
  }
  return null;
}

/** Size of a PNG, JPEG, GIF or WebP file from its first bytes; null when not recognised. */
export function readImageSize(bytes: Buffer): ImageSize | null {
  const size = png(bytes) ?? jpeg(bytes) ?? gif(bytes) ?? webp(bytes);
  return size && size.width > 0 && size.height > 0 ? size : null;
}

/** Size of a base64 image (a `data:` URL or bare base64); null when it cannot be read. */
export function readBase64ImageSize(value: unknown): ImageSize | null {
  if (typeof value !== 'string') return null;
  const bytes = decodeBase64Prefix(value, IMAGE_HEADER_BASE64_CHARS);
  return bytes ? readImageSize(bytes) : null;
}
