import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Test support lives in `test/` folders and in this package, never under a `src/` that ships
 * (the images delete `test/` folders and this package, so a shipped import of either would fail
 * at start, or worse, carry test helpers into production). This walks every shipped source file
 * and checks what it imports.
 */
const repository = fileURLToPath(new URL('../../../', import.meta.url));

/** Source trees that ship: each service's and each runtime package's `src` and `bin`. */
function shippedRoots(): string[] {
  const roots: string[] = [];
  for (const group of ['services', 'packages']) {
    for (const name of readdirSync(path.join(repository, group))) {
      if (group === 'packages' && name === 'test-harness') continue;
      for (const tree of ['src', 'bin']) roots.push(path.join(repository, group, name, tree));
    }
  }
  return roots;
}

function sourceFiles(dir: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full);
    const shipped = /\.(ts|tsx|mts)$/.test(entry.name) && !/\.(test|spec)\.tsx?$/.test(entry.name);
    return shipped ? [full] : [];
  });
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;

/** Why an import of `specifier` from `file` is test support, or null when it is not. */
function testSupportImport(file: string, specifier: string): string | null {
  if (/^(vitest|@vitest\/|@testing-library\/)/.test(specifier)) return 'a test runner';
  if (specifier.startsWith('@tollgate/test-harness')) return 'the test harness';
  if (/^@tollgate\/[^/]+\/test-kit$/.test(specifier)) return "a service's test kit";
  if (specifier.startsWith('.')) {
    const target = path.resolve(path.dirname(file), specifier);
    const parts = path.relative(repository, target).split(path.sep);
    if (parts.includes('test') || parts.includes('test-e2e')) return 'a test folder';
    if (/\.(test|spec)\.tsx?$/.test(target)) return 'a test file';
  }
  return null;
}

describe('shipped source', () => {
  it('recognises each kind of test-support import', () => {
    const file = path.join(repository, 'services/control-plane/src/modules/billing/billing.service.ts');
    expect(testSupportImport(file, 'vitest')).toBe('a test runner');
    expect(testSupportImport(file, '@tollgate/test-harness')).toBe('the test harness');
    expect(testSupportImport(file, '@tollgate/control-plane/test-kit')).toBe("a service's test kit");
    expect(testSupportImport(file, '../../../test/kit.ts')).toBe('a test folder');
    expect(testSupportImport(file, './billing.rules.test.ts')).toBe('a test file');
    expect(testSupportImport(file, './ledger-check.ts')).toBeNull();
    expect(testSupportImport(file, '@tollgate/control-plane/config')).toBeNull();
  });

  it('imports no test support', () => {
    const files = shippedRoots().flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(100);
    const offences: string[] = [];
    for (const file of files) {
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        const why = specifier ? testSupportImport(file, specifier) : null;
        if (why) offences.push(`${path.relative(repository, file)} imports ${specifier} (${why})`);
      }
    }
    expect(offences).toEqual([]);
  });
});
