import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOG, type ErrorCode, isAllowedStatus, isErrorCode } from './catalog.ts';

/**
 * The catalogue against the code tables of the documents that promise its behaviour:
 * docs/behaviour.md, which the repository holds (always checked), and the product specification
 * that CI keeps beside the checkout (../shared/SPEC.md), checked when it is there so that the
 * catalogue and the page cannot drift from it either.
 */
const behaviourPath = fileURLToPath(new URL('../../../docs/behaviour.md', import.meta.url));
const specPath = fileURLToPath(new URL('../../../../shared/SPEC.md', import.meta.url));

interface CodeRow {
  code: string;
  status: string;
  retryable: string | undefined;
}

/** Rows of every markdown table whose header starts with `| Code | HTTP |`. */
function readCodeTables(markdown: string): CodeRow[] {
  const rows: CodeRow[] = [];
  let inTable = false;
  for (const line of markdown.split('\n')) {
    const cells = line.trim().startsWith('|')
      ? line
          .trim()
          .slice(1, -1)
          .split('|')
          .map((cell) => cell.trim())
      : null;
    if (!cells) {
      inTable = false;
      continue;
    }
    if (cells[0] === 'Code' && cells[1] === 'HTTP') {
      inTable = true;
      continue;
    }
    if (!inTable || /^-+$/.test(cells[0] ?? '')) continue;
    rows.push({ code: cells[0]!, status: cells[1]!, retryable: cells[3] });
    // "Key disabled (also api_key_revoked, api_key_expired)" names siblings with the same status.
    const also = /\(also ([a-z_, ]+)\)/.exec(cells[2] ?? '');
    for (const sibling of also?.[1]?.split(',') ?? []) {
      rows.push({ code: sibling.trim(), status: cells[1]!, retryable: cells[3] });
    }
  }
  return rows;
}

function readClientClassifiedCodes(markdown: string): string[] {
  const paragraph = /Client-classified codes[^:]*:([\s\S]*?)\n\n/.exec(`${markdown}\n\n`)?.[1] ?? '';
  return [...paragraph.matchAll(/\b([a-z]+_[a-z_]+) \(/g)].map((match) => match[1]!);
}

/** Statuses a table cell allows, as concrete statuses. */
function statusesOf(cell: string): number[] {
  if (/^5xx/.test(cell)) return [500, 502, 503, 504];
  if (/^4xx/.test(cell)) return [400, 404, 409, 413, 422, 429];
  return [...cell.matchAll(/\b(\d{3})\b/g)].map((match) => Number(match[1]));
}

function checkAgainst(markdown: string, options: { extensionsMayBeMissing: boolean }) {
  const rows = readCodeTables(markdown);

  it('has both code tables', () => {
    expect(rows.length).toBeGreaterThanOrEqual(30);
  });

  it('has every code of the tables, with an allowed status and the same retryable flag', () => {
    for (const row of rows) {
      expect(isErrorCode(row.code), `${row.code} missing from the catalogue`).toBe(true);
      const entry = ERROR_CATALOG[row.code as ErrorCode];
      const statuses = statusesOf(row.status);
      expect(statuses.length, `no status in the row of ${row.code}`).toBeGreaterThan(0);
      for (const status of statuses) {
        expect(isAllowedStatus(row.code as ErrorCode, status), `${row.code} must allow ${status}`).toBe(true);
      }
      expect(entry.status !== null && statuses.includes(entry.status), `${row.code} default status`).toBe(
        true,
      );
      if (row.retryable === 'yes' || row.retryable === 'no') {
        expect(entry.retryable, `${row.code} retryable`).toBe(row.retryable === 'yes');
      }
    }
  });

  it('has the client-classified codes, marked as never sent by a server', () => {
    const codes = readClientClassifiedCodes(markdown);
    expect(codes).toEqual(['network_unreachable', 'endpoint_unavailable', 'unknown_error']);
    for (const code of codes) {
      expect(isErrorCode(code)).toBe(true);
      expect(ERROR_CATALOG[code as ErrorCode].origin).toBe('client');
    }
  });

  it('names every code of the catalogue', () => {
    const named = new Set([...rows.map((row) => row.code), ...readClientClassifiedCodes(markdown)]);
    const unnamed = Object.entries(ERROR_CATALOG)
      .filter(
        ([code, entry]) => !named.has(code) && !(options.extensionsMayBeMissing && 'extension' in entry),
      )
      .map(([code]) => code);
    expect(unnamed).toEqual([]);
  });
}

describe('error catalogue agrees with docs/behaviour.md', () => {
  checkAgainst(readFileSync(behaviourPath, 'utf8'), { extensionsMayBeMissing: false });
});

if (existsSync(specPath)) {
  describe(`error catalogue agrees with the specification (${specPath})`, () => {
    // The specification names no code for what this service adds (`extension` in the catalogue).
    checkAgainst(readFileSync(specPath, 'utf8'), { extensionsMayBeMissing: true });
  });
} else {
  describe('error catalogue against the specification', () => {
    it.skip(`skipped: ${specPath} is not beside this checkout (docs/behaviour.md is checked above)`, () => {});
  });
}
