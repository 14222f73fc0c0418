/** Request-side units the inference routes call: body, parameters, max output, edits, token estimate. */
export { estimateInputTokens, estimateReservedInputTokens } from '../tokens/count-tokens.ts';
export { checkCostParameters } from './cost-parameters.ts';
export { parseJsonObject } from './json-object.ts';
export { resolveMaxOutput } from './max-output.ts';
export { assertSupportedParameters } from './parameters.ts';
export { readBodyWithLimit, readStreamWithLimit } from './read-body.ts';
export {
  editTopLevelValue,
  readTopLevelValue,
  setTopLevelFields,
  withIncludeUsage,
} from './top-level-json.ts';
