import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// Hand-written: madge and dpdm read sources with TypeScript's JavaScript API, which the native
// TypeScript 7 of this repository does not have. The dashboard's imports are all static and
// relative ('./x.ts'), so a regular expression finds every edge.
const SOURCE = path.join(import.meta.dirname, '../src');

function sourcesOf(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourcesOf(full);
    return /\.tsx?$/.test(entry.name) && !/\.(test|d)\.ts$/.test(entry.name) ? [full] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gms)].map((match) =>
    path.resolve(path.dirname(file), match[1] ?? ''),
  );
}

/** Every cycle of the import graph (each file to what it imports), as the files around it. */
function cycles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const visit = (file: string, trail: string[]) => {
    const at = trail.indexOf(file);
    if (at >= 0) return void found.push(trail.slice(at).concat(file));
    if (done.has(file)) return;
    for (const next of edges.get(file) ?? []) visit(next, [...trail, file]);
    done.add(file);
  };
  for (const file of edges.keys()) visit(file, []);
  return found;
}

describe("the dashboard's modules", () => {
  it('import one another without a cycle', () => {
    const files = sourcesOf(SOURCE);
    expect(files.length).toBeGreaterThan(20);
    expect(importsOf(path.join(SOURCE, 'app.tsx')).length).toBeGreaterThan(10);
    const graph = new Map(files.map((file) => [path.relative(SOURCE, file), importsOf(file)]));
    for (const [file, imports] of graph)
      graph.set(
        file,
        imports.map((to) => path.relative(SOURCE, to)),
      );
    expect(cycles(graph)).toEqual([]);
  });

  it('would name a cycle, type-only imports included', () => {
    const graph = new Map([
      ['keys.tsx', ['key-form.tsx', 'api.ts']],
      ['key-form.tsx', ['keys.tsx']],
      ['api.ts', []],
    ]);
    expect(cycles(graph)).toEqual([['keys.tsx', 'key-form.tsx', 'keys.tsx']]);
  });
});
