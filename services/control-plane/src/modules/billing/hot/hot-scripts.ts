import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LIMITS_LUA } from '@tollgate/service-kit';
import { compileLayout, luaRecordCodecs, SCRIPT_LAYOUTS, type ScriptName } from './hot-layout.ts';

const LUA_DIRECTORY = path.join(import.meta.dirname, 'lua');

function readLua(file: string): string {
  return readFileSync(path.join(LUA_DIRECTORY, file), 'utf8');
}

/** The shared helpers, after the writers of the `|` texts they use (generated). */
export const COMMON_SOURCE = `${luaRecordCodecs()}${readLua('common.lua')}`;

/**
 * The source Redis runs for a script: the limiter's functions (the reservation checks rate and
 * concurrency ceilings), the shared helpers with the writers of the `|` texts (generated), then
 * the script's file; its layout's names turned into numbers (compileLayout).
 */
export function scriptSource(script: ScriptName): string {
  const layout = SCRIPT_LAYOUTS[script];
  return compileLayout(
    script,
    [
      script === 'hotReserve' ? LIMITS_LUA : '',
      layout.common ? COMMON_SOURCE : '',
      readLua(layout.file),
    ].join('\n'),
  );
}

/** Every script's source, read once when the hot tier is first loaded. */
export const SCRIPT_SOURCES = Object.fromEntries(
  Object.keys(SCRIPT_LAYOUTS).map((script) => [script, scriptSource(script as ScriptName)]),
) as Record<ScriptName, string>;
