/**
 * The control plane's module structure (issue 24, must-hold 4): nothing outside billing reaches
 * into billing/hot/ (the engine is chosen in billing/engines.ts and used through the BillingEngine
 * interface, billing/billing-engine.ts); nothing in src imports a cycle, type imports included
 * (billing, http and deps among them); test support lives in test/, not src/.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

  it('has no import cycle anywhere in src (billing, http and deps included)', () => {
    // Type imports count: a cycle through `import type` still ties the modules together.
    const files = sourceFiles(path.join(PACKAGE, 'src'));
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
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
        else if (!state.has(next) && graph.has(next)) visit(next);
      }
      trail.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('keeps test support out of src: every file there but tests is reached from an entry point', () => {
    // Entry points: the server, the operator CLI, and what package.json exports (test/kit.ts is
    // the tests' own). A file in src that only tests import is test support and belongs in test/.
    const manifest = JSON.parse(readFileSync(path.join(PACKAGE, 'package.json'), 'utf8')) as {
      exports: Record<string, string>;
    };
    const entries = [
      path.join(PACKAGE, 'src', 'main.ts'),
      ...sourceFiles(path.join(PACKAGE, 'bin')),
      ...Object.values(manifest.exports).map((target) => path.resolve(PACKAGE, target)),
    ].filter((file) => relative(file).startsWith('src') || relative(file).startsWith('bin'));
    const reached = new Set<string>();
    const pending = [...entries];
    while (pending.length > 0) {
      const file = pending.pop()!;
      if (reached.has(file)) continue;
      reached.add(file);
      pending.push(...importsOf(file).filter((target) => existsSync(target)));
    }
    const unreached = sourceFiles(path.join(PACKAGE, 'src'))
      .filter((file) => !file.endsWith('.test.ts') && !reached.has(file))
      .map(relative);
    expect(unreached).toEqual([]);
    // And production code never imports the tests' support (test/) or a test file.
    const intoTests = [...reached]
      .flatMap((file) => importsOf(file).map((target) => `${relative(file)} -> ${relative(target)}`))
      .filter((edge) => / -> (test\/|.*\.test\.ts$)/.test(edge));
    expect(intoTests).toEqual([]);
  });
});
