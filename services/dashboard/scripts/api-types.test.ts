import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, renderApiTypes } from './api-types.ts';

describe("the dashboard's API types", () => {
  // Rendering loads the control plane's whole OpenAPI document: seconds on a loaded box.
  it("are the ones generated from the control plane's OpenAPI document (run `pnpm api:types`)", {
    timeout: 60_000,
  }, async () => {
    expect(readFileSync(API_TYPES_FILE, 'utf8')).toBe(await renderApiTypes());
  });
});
