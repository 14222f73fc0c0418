/**
 * A tool both protocols declare in their own shape, and the arguments the mock fills its schema
 * with (first enum value, "mock" for strings).
 */
export const WEATHER_PARAMETERS = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'],
};

export const WEATHER_ARGUMENTS = { city: 'mock', unit: 'c' };
