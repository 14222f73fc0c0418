import { createHash } from 'node:crypto';
import type { IrTool } from './ir.ts';

/** What every upstream accepts as a tool name (OpenAI's rule, the strictest of them). */
const VALID_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const NAMESPACE_SEPARATOR = '__';

export interface CallerTool {
  name: string;
  namespace?: string;
  custom: boolean;
}

/**
 * The upstream name of a caller's tool: namespaced tools flattened as `namespace__name`, and any
 * name that is too long or has characters outside [a-zA-Z0-9_-] shortened to a valid one with a
 * hash of the original, so distinct names stay distinct. Deterministic, so calls in the history
 * map the same way as the declarations.
 */
export function upstreamToolName(name: string, namespace?: string): string {
  const flat = namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name;
  if (VALID_NAME.test(flat)) return flat;
  const hash = createHash('sha256').update(flat).digest('hex').slice(0, 8);
  return `${flat.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 55)}_${hash}`;
}

/** The caller's tools by upstream name, to turn the upstream's calls back (reversible names). */
export class ToolNames {
  readonly #byUpstream = new Map<string, CallerTool>();

  constructor(tools: readonly IrTool[]) {
    for (const tool of tools) {
      this.#byUpstream.set(upstreamToolName(tool.name, tool.namespace), {
        name: tool.name,
        ...(tool.namespace ? { namespace: tool.namespace } : {}),
        custom: tool.custom !== undefined,
      });
    }
  }

  upstream(name: string, namespace?: string): string {
    return upstreamToolName(name, namespace);
  }

  /** The caller's tool an upstream name stands for; an undeclared name is returned as it came. */
  caller(upstreamName: string): CallerTool {
    return this.#byUpstream.get(upstreamName) ?? { name: upstreamName, custom: false };
  }
}

/**
 * A tool as a function for upstreams without custom (freeform) tools: a custom tool becomes one
 * string argument `input`, its format told in the description; a function stays as declared.
 */
export function asFunction(tool: IrTool): {
  description?: string;
  parameters: Record<string, unknown>;
  strict?: boolean;
} {
  if (!tool.custom) {
    return {
      ...(tool.description !== undefined ? { description: tool.description } : {}),
      parameters: tool.parameters,
      ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
    };
  }
  const format = JSON.stringify(tool.custom.format ?? { type: 'text' });
  return {
    description:
      `${tool.description ?? ''}\n\nWrite the whole input as the string argument \`input\`. Its format: ${format}`.trim(),
    parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
  };
}
