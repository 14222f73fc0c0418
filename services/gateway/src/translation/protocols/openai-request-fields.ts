import { type Json, readOptionalNumber } from '../fields.ts';
import type { IrRequest } from '../ir.ts';

/**
 * The fields chat completions and Responses requests share, read the same way: sampling,
 * `parallel_tool_calls` and the end-user id (`safety_identifier`, else the older `user`).
 */
export function readOpenAiCommonFields(body: Json, request: IrRequest): void {
  const temperature = readOptionalNumber(body.temperature, 'temperature');
  if (temperature !== undefined) request.temperature = temperature;
  const topP = readOptionalNumber(body.top_p, 'top_p');
  if (topP !== undefined) request.topP = topP;
  if (typeof body.parallel_tool_calls === 'boolean')
    request.parallelToolCalls = { value: body.parallel_tool_calls, field: 'parallel_tool_calls' };
  const user = body.safety_identifier ?? body.user;
  if (typeof user === 'string') request.user = user;
}
