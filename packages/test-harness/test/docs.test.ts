import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../src/processes.ts';

/**
 * What the docs name must exist: every relative link (and its #anchor), every environment variable,
 * every `tollgate-admin` command and every `pnpm` script. The generated pages are checked against
 * their sources elsewhere (errors-page.test.ts, config.docs.test.ts).
 */
const tracked = (...patterns: string[]) =>
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', ...patterns], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);

const PAGES = tracked('*.md').filter((file) => existsSync(path.join(ROOT, file)));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** Markdown without its fenced code blocks' bodies, which may hold anything. */
const prose = (markdown: string) => markdown.replace(/```[^\n]*\n[\s\S]*?```/g, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{Letter}\p{Number}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const headings = prose(read(file))
    .split('\n')
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => slug(line.replace(/^#+ /, '')));
  return new Set(headings);
}

describe('the docs', () => {
  it('are found', () => {
    expect(PAGES).toContain('README.md');
    expect(PAGES).toContain('docs/README.md');
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!) || target!.startsWith('mailto:')) continue;
        const [file, anchor] = target!.split('#');
        const resolved = file ? path.normalize(path.join(path.dirname(page), file)) : page;
        if (!existsSync(path.join(ROOT, resolved))) {
          broken.push(`${page}: ${target} (no file)`);
        } else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
          broken.push(`${page}: ${target} (no heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('name only environment variables the code or the scripts read', () => {
    const sources = tracked(
      '*.ts',
      '*.tsx',
      '*.sh',
      '*.yaml',
      '*.yml',
      '*.mjs',
      '*.conf',
      '*Dockerfile',
      '.ci/run',
      '*.env*',
    )
      .filter((file) => existsSync(path.join(ROOT, file)))
      .map(read)
      .join('\n');
    const unknown = new Set<string>();
    for (const page of PAGES) {
      for (const [, name] of read(page).matchAll(/`\$?\{?([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])[}=`]/g)) {
        if (!sources.includes(name!)) unknown.add(`${page}: ${name}`);
      }
    }
    expect([...unknown]).toEqual([]);
  });

  it('name only tollgate-admin commands that exist', () => {
    const commands = new Set(
      [...read('services/control-plane/src/cli/commands.ts').matchAll(/usage:\s*'([a-z-]+)/g)].map(
        (match) => match[1],
      ),
    );
    expect(commands.size).toBeGreaterThan(10);
    const unknown: string[] = [];
    for (const page of PAGES) {
      for (const [, command] of read(page).matchAll(
        /(?:tollgate-admin|admin\.sh|tollgate-admin\.ts) ([a-z][a-z-]+)/g,
      )) {
        if (!commands.has(command!)) unknown.push(`${page}: ${command}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('name only pnpm scripts that exist', () => {
    const scripts = new Set(Object.keys(JSON.parse(read('package.json')).scripts));
    const builtIn = new Set(['install', 'vitest', 'exec', 'run', 'test', 'biome']);
    const unknown: string[] = [];
    for (const page of PAGES) {
      for (const [, script] of read(page).matchAll(/(?:^|`)pnpm ([a-z][a-z:-]*)/gm)) {
        if (!scripts.has(script!) && !builtIn.has(script!)) unknown.push(`${page}: pnpm ${script}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
