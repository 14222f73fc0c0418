/**
 * The control plane's module structure (issue 24, must-hold 4): nothing outside billing reaches
 * into billing/hot/ (the engine is chosen in billing/engines.ts and used through the BillingEngine
 * interface, billing/billing-engine.ts), and billing, http and deps import no cycle, type imports
 * included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const PACKAGE = path.resolve(import.meta.dirname, '..');
const REPOSITORY = path.resolve(PACKAGE, '../..');

/** The .ts files under a folder, installed packages (node_modules) left out. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full);
    return entry.isFile() && /\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

/** Each relative import of a file (import and export ... from), resolved to a path. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:import|export)[^'"]*?from\s+'(\.[^']+)'/g)].map((match) =>
    path.resolve(path.dirname(file), match[1]!),
  );
}

const relative = (file: string) => path.relative(PACKAGE, file);

describe('the control plane’s structure', () => {
  it('imports billing/hot/ only from billing', () => {
    // The whole package (the operator CLI in bin/ too) and the repository's other code.
    const outside = [
      ...['src', 'test', 'bin'].flatMap((folder) => sourceFiles(path.join(PACKAGE, folder))),
      ...['test-e2e', 'bench', 'packages', 'services/gateway'].flatMap((folder) =>
        sourceFiles(path.join(REPOSITORY, folder)),
      ),
    ]
      .filter((file) => !relative(file).startsWith(path.join('src', 'modules', 'billing')))
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => relative(target).startsWith(path.join('src', 'modules', 'billing', 'hot')))
          .map((target) => `${relative(file)} -> ${relative(target)}`),
      );
    expect(outside).toEqual([]);
  });

  it('asks which billing engine runs only inside billing (and where it is opened and logged)', () => {
    // The engine is chosen once (billing/engines.ts); a branch on it elsewhere is a second choice.
    const branching = sourceFiles(path.join(PACKAGE, 'src'))
      .filter((file) => !relative(file).startsWith(path.join('src', 'modules', 'billing')))
      .filter((file) => !file.endsWith('.test.ts') && !file.endsWith('server.ts'))
      .filter((file) => /\bdeps\.hot\b|\bhot: HotTier|billing\.kind\b/.test(readFileSync(file, 'utf8')))
      .map(relative);
    expect(branching).toEqual([]);
  });

  it('has no import cycle among billing, http and deps', () => {
    const inScope = (file: string) => /^src\/(modules\/billing\/|http\/|deps\.ts$)/.test(relative(file));
    const files = sourceFiles(path.join(PACKAGE, 'src')).filter(
      (file) => inScope(file) && !file.endsWith('.test.ts'),
    );
    const graph = new Map(files.map((file) => [file, importsOf(file).filter(inScope)]));
    // Depth-first search; a file met again while still on the path closes a cycle.
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const trail: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      trail.push(file);
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === 'open')
          cycles.push([...trail.slice(trail.indexOf(next)), next].map(relative).join(' -> '));
        else if (!state.has(next)) visit(next);
      }
      trail.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});
