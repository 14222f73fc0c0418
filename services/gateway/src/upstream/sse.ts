import { StringDecoder } from 'node:string_decoder';

/** One server-sent event, as the relay needs it. */
export interface SseEvent {
  /** The `event:` field; undefined when the block had none. */
  event: string | undefined;
  /** The `data:` lines joined with "\n" (one leading space of each value removed). */
  data: string;
  /** The block exactly as received, including the blank line that ended it. */
  raw: string;
}

const LF = 10;
const SPACE = 32;

/**
 * The one incremental SSE reader (WHATWG event-stream rules): CRLF, LF or CR line endings,
 * multi-line data, comments, and chunk boundaries anywhere, including inside a UTF-8 character
 * or between the CR and LF of one line ending. Only blocks with at least one `data:` line are
 * events; comment-only blocks (`: ping`) and `id:`/`retry:` lines are read and dropped.
 */
export class SseParser {
  // StringDecoder keeps a split UTF-8 character for the next chunk, like TextDecoder's stream mode,
  // at about half the cost per chunk.
  readonly #decoder = new StringDecoder('utf8');
  #started = false;
  /** Text of the block being read; earlier blocks are already cut off. */
  #buffer = '';
  /** Offset in #buffer of the first line not processed yet. */
  #scan = 0;
  #event: string | undefined = undefined;
  /** Undefined until the block has a data line. */
  #data: string | undefined = undefined;

  /** Feeds bytes (or already-decoded text) and returns every event completed by them. */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    return this.#consume(this.#withoutByteOrderMark(text), false);
  }

  /**
   * Ends the stream. An event left without its closing blank line is still returned (its raw text
   * completed with the missing line endings) so a final `data: [DONE]` is never lost.
   */
  flush(): SseEvent[] {
    return this.#consume(this.#withoutByteOrderMark(this.#decoder.end()), true);
  }

  /** A byte-order mark opening the stream is not part of the first line. */
  #withoutByteOrderMark(text: string): string {
    if (this.#started || text.length === 0) return text;
    this.#started = true;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  #consume(text: string, final: boolean): SseEvent[] {
    const buffer = text.length === 0 ? this.#buffer : this.#buffer + text;
    const events: SseEvent[] = [];
    let blockStart = 0;
    let position = this.#scan;
    // Cached positions of the next LF and CR, so a long buffer is scanned once, not once per line.
    let nextLf = buffer.indexOf('\n', position);
    let nextCr = buffer.indexOf('\r', position);
    while (position < buffer.length) {
      if (nextLf !== -1 && nextLf < position) nextLf = buffer.indexOf('\n', position);
      if (nextCr !== -1 && nextCr < position) nextCr = buffer.indexOf('\r', position);
      let lineEnd: number;
      let next: number;
      if (nextCr !== -1 && (nextLf === -1 || nextCr < nextLf)) {
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (nextCr + 1 === buffer.length && !final) break;
        lineEnd = nextCr;
        next = buffer.charCodeAt(nextCr + 1) === LF ? nextCr + 2 : nextCr + 1;
      } else if (nextLf !== -1) {
        lineEnd = nextLf;
        next = nextLf + 1;
      } else {
        break;
      }
      if (lineEnd === position) {
        if (this.#data !== undefined) {
          events.push({ event: this.#event, data: this.#data, raw: buffer.slice(blockStart, next) });
        }
        this.#event = undefined;
        this.#data = undefined;
        blockStart = next;
      } else {
        this.#readLine(buffer, position, lineEnd);
      }
      position = next;
    }
    if (final) {
      if (position < buffer.length) this.#readLine(buffer, position, buffer.length);
      if (this.#data !== undefined) {
        const rest = buffer.slice(blockStart);
        const ending = position < buffer.length ? '\n\n' : '\n';
        events.push({ event: this.#event, data: this.#data, raw: rest + ending });
      }
      this.#event = undefined;
      this.#data = undefined;
      this.#buffer = '';
      this.#scan = 0;
      return events;
    }
    this.#buffer = blockStart === 0 ? buffer : buffer.slice(blockStart);
    this.#scan = position - blockStart;
    return events;
  }

  #readLine(buffer: string, start: number, end: number): void {
    const colon = buffer.indexOf(':', start);
    if (colon === start) return; // a comment
    let field: string;
    let value: string;
    if (colon === -1 || colon > end) {
      field = buffer.slice(start, end);
      value = '';
    } else {
      field = buffer.slice(start, colon);
      const valueStart = buffer.charCodeAt(colon + 1) === SPACE && colon + 1 < end ? colon + 2 : colon + 1;
      value = buffer.slice(valueStart, end);
    }
    if (field === 'data') {
      this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    } else if (field === 'event') {
      this.#event = value;
    }
  }
}
