import type { IrReasoningRequest, ReasoningEffort } from './ir.ts';

/**
 * Effort and token budget are two ways of asking for reasoning: Anthropic takes a budget
 * (`thinking.budget_tokens`, at least 1,024 and below max_tokens) or an effort
 * (`output_config.effort`), OpenAI an effort. The table is LiteLLM's (low 1,024, medium 2,048,
 * high 4,096), extended at both ends.
 */
const BUDGETS: Record<ReasoningEffort, number> = {
  none: 0,
  minimal: 1024,
  low: 1024,
  medium: 2048,
  high: 4096,
  xhigh: 8192,
  max: 16384,
};

export const MIN_THINKING_BUDGET = 1024;

export function budgetForEffort(effort: ReasoningEffort): number {
  return BUDGETS[effort];
}

/** The effort closest to a budget, on OpenAI's scale. */
export function effortForBudget(budget: number): ReasoningEffort {
  if (budget < 2048) return 'low';
  if (budget < 4096) return 'medium';
  return 'high';
}

const EFFORTS: readonly string[] = Object.keys(BUDGETS);

export function isEffort(value: unknown): value is ReasoningEffort {
  return typeof value === 'string' && EFFORTS.includes(value);
}

/** The effort to send an OpenAI upstream: the one asked for, else the budget's; `max` is `xhigh`. */
export function openAiEffort(reasoning: IrReasoningRequest): ReasoningEffort | undefined {
  const effort =
    reasoning.effort ??
    (reasoning.budgetTokens !== undefined ? effortForBudget(reasoning.budgetTokens) : undefined);
  return effort === 'max' ? 'xhigh' : effort;
}
