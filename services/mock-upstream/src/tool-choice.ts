import type { DeclaredTool } from './reply-plan.ts';

/**
 * How the request lets the model use its tools, in protocol-neutral form: `auto` (the mock calls
 * a tool only on its `tool` directive), `none` (never), `required` (always: Anthropic's `any` or
 * a named tool, OpenAI's `required` or a named function).
 */
export type ToolChoice = 'auto' | 'none' | 'required';

/** A protocol's tool_choice, read: the mode, and the tool it names, if any. */
export interface RequestedChoice {
  mode: ToolChoice;
  name?: string;
}

/**
 * The tool an answer would call and the mode: the named tool when the choice names one (a name
 * the request did not declare leaves no tool, as a provider would not invent one), else the
 * first declared tool.
 */
export function chooseTool(
  tools: DeclaredTool[],
  choice: RequestedChoice,
): { tool?: DeclaredTool; toolChoice: ToolChoice } {
  const tool =
    choice.name === undefined ? tools[0] : tools.find((candidate) => candidate.name === choice.name);
  return tool ? { tool, toolChoice: choice.mode } : { toolChoice: choice.mode };
}

const object = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

/** Anthropic: `{type: "auto" | "any" | "none"}` or `{type: "tool", name}`. */
export function anthropicChoice(value: unknown): RequestedChoice {
  const choice = object(value);
  if (choice?.type === 'any') return { mode: 'required' };
  if (choice?.type === 'tool' && typeof choice.name === 'string')
    return { mode: 'required', name: choice.name };
  if (choice?.type === 'none') return { mode: 'none' };
  return { mode: 'auto' };
}

/**
 * OpenAI chat completions and responses: `"auto" | "none" | "required"`, or a named function as
 * `{type: "function", function: {name}}` (chat) or `{type: "function", name}` (responses).
 */
export function openAiChoice(value: unknown): RequestedChoice {
  if (value === 'required') return { mode: 'required' };
  if (value === 'none') return { mode: 'none' };
  const choice = object(value);
  if (choice?.type === 'function') {
    const name = object(choice.function)?.name ?? choice.name;
    if (typeof name === 'string') return { mode: 'required', name };
  }
  return { mode: 'auto' };
}
