import type { IrStreamPart } from './ir.ts';
import type { StreamEncoder } from './protocol.ts';

type BlockPart = Exclude<IrStreamPart, { type: 'start' } | { type: 'finish' }>;

/**
 * Puts a stream's blocks one after another: start, its deltas, end, then the next block. Upstreams
 * may interleave blocks (chat completions streams parallel tool calls side by side); Messages and
 * Responses callers get each block whole, in order. Parts of a block other than the open one wait
 * until it ends. Also drops what would break a caller: a delta or end of a block never started, a
 * second start or end of one block. `finish` closes the open block and flushes the waiting ones.
 */
export class BlockSequencer {
  #open: string | null = null;
  readonly #started = new Set<string>();
  readonly #ended = new Set<string>();
  /** Blocks waiting their turn, in the order they started, with their parts so far. */
  readonly #waiting = new Map<string, BlockPart[]>();

  push(part: IrStreamPart): IrStreamPart[] {
    if (part.type === 'start') return [part];
    if (part.type === 'finish') {
      const out: IrStreamPart[] = [];
      if (this.#open !== null) out.push(this.#end(this.#open));
      out.push(...this.#drain(true), part);
      return out;
    }
    return this.#block(part);
  }

  #block(part: BlockPart): IrStreamPart[] {
    const id = part.id;
    const isStart =
      part.type === 'text-start' || part.type === 'reasoning-start' || part.type === 'tool-call-start';
    if (isStart) {
      if (this.#started.has(id)) return [];
      this.#started.add(id);
    } else if (!this.#started.has(id) || this.#ended.has(id)) {
      return [];
    }
    if (part.type === 'block-end') this.#ended.add(id);
    if (this.#open === null && isStart) {
      this.#open = id;
      return [part];
    }
    if (this.#open === id) {
      if (part.type !== 'block-end') return [part];
      this.#open = null;
      return [part, ...this.#drain(false)];
    }
    const queue = this.#waiting.get(id);
    if (queue) queue.push(part);
    else this.#waiting.set(id, [part]);
    return [];
  }

  #end(id: string): IrStreamPart {
    this.#ended.add(id);
    this.#open = null;
    return { type: 'block-end', id };
  }

  /** Releases waiting blocks in order: whole ones entirely, then the first unfinished one opens. */
  #drain(closeAll: boolean): IrStreamPart[] {
    const out: IrStreamPart[] = [];
    for (const [id, parts] of this.#waiting) {
      this.#waiting.delete(id);
      out.push(...parts);
      if (parts.at(-1)?.type === 'block-end') continue;
      if (closeAll) {
        out.push(this.#end(id));
        continue;
      }
      this.#open = id;
      break;
    }
    return out;
  }
}

/** An encoder that takes parts one block at a time (BlockSequencer) and counts its events. */
export function sequencedEncoder(
  encodeOne: (part: IrStreamPart) => string,
  eventCount: () => number,
): StreamEncoder {
  const sequencer = new BlockSequencer();
  return {
    encode(part) {
      let text = '';
      for (const next of sequencer.push(part)) text += encodeOne(next);
      return text;
    },
    get eventCount() {
      return eventCount();
    },
  };
}
