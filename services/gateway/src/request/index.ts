/** Request-side units the inference routes call: body, parameters, max output, edits, token estimate. */
export { estimateInputTokens, estimateReservedInputTokens } from '../tokens/count-tokens.ts';
export { parseJsonObject } from './json-object.ts';
export { type MaxOutputResolution, type OutputCeilings, resolveMaxOutput } from './max-output.ts';
export { assertSupportedParameters, listSupportedParameters } from './parameters.ts';
export { readBodyWithLimit } from './read-body.ts';
export { SURFACES, type Surface } from './surface.ts';
export {
  readTopLevelSpans,
  readTopLevelValue,
  setTopLevelFields,
  type TopLevelMember,
  type TopLevelSpans,
  withIncludeUsage,
} from './top-level-json.ts';
