/**
 * The one definition of what the hot tier's Lua scripts (lua/*.lua) and the control plane pass
 * each other: each script's KEYS and ARGV by name, and the `|`-separated texts kept in Redis. The
 * scripts get the same names as Lua tables (luaPrelude); the control plane encodes and parses with
 * the functions below. hot-layout.test.ts runs both against Redis.
 *
 * What Redis holds for one account (one hash tag, so each script runs on one node, atomically):
 * The lease (hash `lease`):
 *   lease, ver        the Postgres lease it mirrors and the newest version of it applied
 *   more, tried       1 when Postgres may hold more for it (a grant, a returned hold): taken in
 *                     before the next call draws; when the last top-up ran (ms)
 *   cut               '' when the lease holds all the account has; else the source (id or `c`) it
 *                     could not take whole, at its bound (R21): calls draw no further than it
 *   last              last reservation or finish (ms)
 *   order             its sources in draw order: entitlement ids, then `c` (credit)
 *   n:<s>             what the lease holds of source s, net of returns (as Postgres has it),
 *                     modulo 2^52 (only its change is used, R21)
 *   r:<s>, h:<s>      of that, what is free, and what calls in flight hold
 *   x:<s>, a:<s>      an entitlement's expiry (ms, 0 = none) and covered aliases (`,a,b,`; '' = all)
 *   w:<s>             '1' when the entitlement is weighted (R2b): a token costs the alias's package rate
 * The calls (hash `calls`), by reservation id:
 *   R|<CALL_FIELDS>   in flight (holding its concurrency slot in the limiter's lease sets, if any)
 *   D|<RECORD_FIELDS> finished, not yet in Postgres
 *   G|<until ms>      tombstone: finished before its reserve arrived, so the reserve takes nothing
 * Key and account entries (strings, KEY_ENTRY_FIELDS and ACCOUNT_ENTRY_FIELDS) carry the version
 * Postgres gave the row (hot-entries.ts); a change under way is `version|changing|until ms`.
 */

/** A script's KEYS and ARGV: a head of named values, then `count` items of named values each. */
export interface ScriptLayout {
  /** The .lua file under lua/. */
  file: string;
  /** Whether the script starts with lua/common.lua (shared helpers and the record codecs). */
  common: boolean;
  keys: readonly string[];
  /**
   * Filled in by encodeCall: 'count', the number of items; 'clockOffsetMs', how far the control
   * plane's clock is from real time (0 but in tests), by which the script moves Redis TIME.
   */
  args: readonly string[];
  itemKeys: readonly string[];
  itemArgs: readonly string[];
}

function layout<const L extends ScriptLayout>(value: L): L {
  return value;
}

export const SCRIPT_LAYOUTS = {
  /** A batch of one account's reservations (R3 to R8). */
  hotReserve: layout({
    file: 'reserve.lua',
    common: true,
    keys: ['lease', 'calls', 'account'],
    args: ['clockOffsetMs', 'topupAllowed', 'coverPercent', 'leaseTtlMs', 'topupEveryMs', 'count'],
    // affinity: the gateway's record of the conversation's last upstream (docs/routing.md), read
    // and renewed for affinityTtlMs with a granted call; '' ttl = none (the key is then a stand-in).
    itemKeys: ['key', 'keyRate', 'planRate', 'keyLeases', 'planLeases', 'affinity'],
    // aliasState: ok, unknown, unpublished, protocol. Prices '' = unpriced. keyRpm '' = limits
    // checked by the gateway. packageRate: units of a weighted entitlement per token (R2b).
    itemArgs: [
      'id',
      'keyId',
      'lookupHash',
      'alias',
      'aliasState',
      'surface',
      'estimateIn',
      'estimateOut',
      'inputPrice',
      'outputPrice',
      'keyRpm',
      'keyConcurrency',
      'planRpm',
      'planConcurrency',
      'windowMs',
      'packageRate',
      'affinityTtlMs',
    ],
  }),
  /** A batch of one account's settles, releases and holds (R9 to R14). */
  hotFinish: layout({
    file: 'finish.lua',
    common: true,
    keys: ['lease', 'calls'],
    args: ['clockOffsetMs', 'forgotten', 'topupAllowed', 'count'],
    itemKeys: [],
    // Prices and packageRate: the alias's of now ('' = unpriced). created: µs, for a call Redis does
    // not know.
    itemArgs: [
      'id',
      'action',
      'usageIn',
      'usageOut',
      'outcome',
      'httpStatus',
      'keyId',
      'alias',
      'surface',
      'inputPrice',
      'outputPrice',
      'created',
      'packageRate',
    ],
  }),
  /** Finished calls Postgres has: forgotten, or kept as tombstones for `tombstoneMs`. */
  hotWritten: layout({
    file: 'written.lua',
    common: true,
    keys: ['calls'],
    args: ['clockOffsetMs', 'tombstoneMs', 'count'],
    itemKeys: [],
    itemArgs: ['id'],
  }),
  /** mode 'claim' takes the account's claim if free; 'verify' checks it is still ours, extended. */
  hotClaim: layout({
    file: 'claim.lua',
    common: false,
    keys: ['lease', 'claim'],
    args: ['token', 'ttlMs', 'mode'],
    itemKeys: [],
    itemArgs: [],
  }),
  /** Writes a lease as Postgres has it; per source: id ('c' = credit), net, expiry ms, aliases, weighted. */
  hotLease: layout({
    file: 'lease.lua',
    common: true,
    keys: ['lease', 'claim'],
    args: ['clockOffsetMs', 'mode', 'token', 'leaseId', 'version', 'cut', 'count'],
    itemKeys: [],
    itemArgs: ['id', 'net', 'expiresAt', 'aliases', 'weighted'],
  }),
  /** Takes what is free in a lease, to be returned in Postgres under `version`. */
  hotRecall: layout({
    file: 'recall.lua',
    common: true,
    keys: ['lease', 'claim'],
    args: ['version'],
    itemKeys: [],
    itemArgs: [],
  }),
  /** The reconciler's pass over one lease. */
  hotSweep: layout({
    file: 'sweep.lua',
    common: true,
    keys: ['lease', 'calls', 'claim'],
    args: ['clockOffsetMs', 'leaseId', 'timeoutMs', 'unwrittenMs', 'idleMs'],
    itemKeys: [],
    itemArgs: [],
  }),
  /** Pushes the expiry of the concurrency slots of calls still in flight (their gateway runs them). */
  hotSlots: layout({
    file: 'slots.lua',
    common: true,
    keys: ['calls'],
    args: ['clockOffsetMs', 'ttlMs', 'count'],
    itemKeys: [],
    itemArgs: ['id'],
  }),
  /** Postgres may hold more for this lease: the next short call tops up. */
  hotMore: layout({ file: 'more.lua', common: false, keys: ['lease'], args: [], itemKeys: [], itemArgs: [] }),
  /** Writes a key's or account's entry unless Redis has a newer one. */
  hotEntry: layout({
    file: 'entry.lua',
    common: false,
    keys: ['entry'],
    args: ['entry', 'version', 'ttlMs', 'now'],
    itemKeys: [],
    itemArgs: [],
  }),
} as const;

export type ScriptName = keyof typeof SCRIPT_LAYOUTS;

/** What each script answers (see its file). */
export interface ScriptReplies {
  /** Per call: ['ok', legs, tokens, credits, budget] | ['no', code, retry ms, budget] | ['miss'] | ['cold'] | ['topup', lease]. */
  hotReserve: string[][];
  /** Per call: ['done', record] | ['unknown'] | ['cold'] | ['topup', lease]. */
  hotFinish: string[][];
  hotWritten: number;
  hotClaim: 'present' | 'busy' | 'claimed' | 'ok' | 'lost';
  hotLease: 'installed' | 'synced' | 'lost' | 'stale';
  /** ['absent', claimed 1/0] | ['taken', lease, source, amount, ...]. */
  hotRecall: Array<string | number>;
  /** ['absent', claimed] | ['other'] | ['closed'] | ['open', record...]. */
  hotSweep: string[];
  /** Slots renewed (calls in flight that hold one). */
  hotSlots: number;
  hotMore: number;
  hotEntry: 'written' | 'older';
}
type Names<T> = T extends readonly (infer N extends string)[] ? N : never;
type Value = string | number;

/** What a script is called with, by name. */
export interface ScriptCall<S extends ScriptName> {
  keys: Record<Names<(typeof SCRIPT_LAYOUTS)[S]['keys']>, string>;
  args: Record<Exclude<Names<(typeof SCRIPT_LAYOUTS)[S]['args']>, 'count' | 'clockOffsetMs'>, Value>;
  items?: Array<{
    keys: Record<Names<(typeof SCRIPT_LAYOUTS)[S]['itemKeys']>, string>;
    args: Record<Names<(typeof SCRIPT_LAYOUTS)[S]['itemArgs']>, Value>;
  }>;
}

/** KEYS and ARGV in the script's order. */
export function encodeCall<S extends ScriptName>(
  script: S,
  call: ScriptCall<S>,
  clockOffsetMs = 0,
): { keys: string[]; args: Value[] } {
  const shape: ScriptLayout = SCRIPT_LAYOUTS[script];
  const items = (call.items ?? []) as Array<{ keys: Record<string, string>; args: Record<string, Value> }>;
  const head = call.args as Record<string, Value>;
  const keys = shape.keys.map((name) => (call.keys as Record<string, string>)[name]!);
  const args = shape.args.map((name) =>
    name === 'count' ? items.length : name === 'clockOffsetMs' ? clockOffsetMs : head[name]!,
  );
  for (const item of items) {
    for (const name of shape.itemKeys) keys.push(item.keys[name]!);
    for (const name of shape.itemArgs) args.push(item.args[name]!);
  }
  return { keys, args };
}

/** A finished call (D|...), in the order the scripts write it. */
export const RECORD_FIELDS = [
  'id',
  'action',
  'status',
  'outcome',
  'httpStatus',
  'lease',
  'keyId',
  'alias',
  'surface',
  'created',
  'estIn',
  'estOut',
  'reservedTokens',
  'reservedCredits',
  'legs',
  'usageIn',
  'usageOut',
  'at',
  'charges',
  'legTakeIn',
  'legTakeOut',
  'creditTake',
  'creditIn',
  'creditOut',
  'overTakeIn',
  'overTakeOut',
  'overCredit',
  'overIn',
  'overOut',
  'forgotten',
] as const;

/**
 * A call in flight (R|...): created in µs; legs as in a record; slots, the limiter's lease sets
 * holding its concurrency slot (','-separated, '' = none), which finishing it frees.
 */
export const CALL_FIELDS = [
  'keyId',
  'alias',
  'surface',
  'created',
  'estIn',
  'estOut',
  'reservedTokens',
  'reservedCredits',
  'legs',
  'slots',
] as const;

/** A key's entry: expiry ms (0 = none); scope `,a,b,` ('' = every alias). */
export const KEY_ENTRY_FIELDS = ['version', 'state', 'lookupHash', 'expiresAt', 'scope'] as const;
export const ACCOUNT_ENTRY_FIELDS = ['version', 'state'] as const;

export type Fields<T extends readonly string[]> = Record<T[number], string>;

/** The `|` text of named values, in the order of `fields`. */
export function joinFields<T extends readonly string[]>(fields: T, values: Record<T[number], Value>): string {
  return fields.map((field: T[number]) => String(values[field])).join('|');
}

/** The named values of a `|` text; null when it has not exactly the fields' count. */
export function splitFields<T extends readonly string[]>(fields: T, text: string): Fields<T> | null {
  const values = text.split('|');
  if (values.length !== fields.length) return null;
  // A plain loop: every settle parses a 30-field record, and fromEntries over a map costs more.
  const named: Record<string, string> = {};
  for (let index = 0; index < fields.length; index += 1) named[fields[index]!] = values[index]!;
  return named as Fields<T>;
}

/** The `|` texts the scripts index by name (RECORD.x, CALL.x, ...), as the scripts spell them. */
const RECORD_INDEXES: Record<string, readonly string[]> = {
  RECORD: RECORD_FIELDS,
  CALL: CALL_FIELDS,
  KEY_ENTRY: KEY_ENTRY_FIELDS,
  ACCOUNT_ENTRY: ACCOUNT_ENTRY_FIELDS,
};

/**
 * A script's Lua with every name of its layout replaced by the number it stands for: KEY.x and
 * ARG.x index the head of KEYS and ARGV; item i's key x is KEYS[KEYS_HEAD + (i - 1) * ITEM_KEYS +
 * ITEM_KEY.x], its argument ARGV[ARGS_HEAD + (i - 1) * ITEM_ARGS + ITEM_ARG.x]; RECORD.x, CALL.x,
 * KEY_ENTRY.x and ACCOUNT_ENTRY.x index the fields of a `|` text. Done here, once, rather than
 * with tables the script would build and look up on every run (Redis runs a script's whole body
 * each time); a name the layout lacks fails here, not in Redis.
 */
export function compileLayout(script: ScriptName, source: string): string {
  const shape: ScriptLayout = SCRIPT_LAYOUTS[script];
  const indexes: Record<string, readonly string[]> = {
    KEY: shape.keys,
    ARG: shape.args,
    ITEM_KEY: shape.itemKeys,
    ITEM_ARG: shape.itemArgs,
    ...RECORD_INDEXES,
  };
  const heads = [
    `-- Generated from hot-layout.ts (SCRIPT_LAYOUTS.${script}).`,
    `local KEYS_HEAD, ITEM_KEYS = ${shape.keys.length}, ${shape.itemKeys.length}`,
    `local ARGS_HEAD, ITEM_ARGS = ${shape.args.length}, ${shape.itemArgs.length}`,
    '',
  ].join('\n');
  const body = source.replace(
    /\b(KEY|ARG|ITEM_KEY|ITEM_ARG|RECORD|CALL|KEY_ENTRY|ACCOUNT_ENTRY)\.([A-Za-z]\w*)/g,
    (_, table: string, name: string) => {
      const index = indexes[table]!.indexOf(name);
      if (index < 0) throw new Error(`hot tier: ${script} uses ${table}.${name}, which its layout lacks`);
      return String(index + 1);
    },
  );
  return `${heads}${body}`;
}

/**
 * The Lua that writes the `|` texts (lua/common.lua uses them): record(r) for a finished call,
 * inFlight(c) for a call in flight, each field by name in the layout's order. One concatenation:
 * a missing field fails it (Lua cannot concatenate nil), where table.concat would drop a trailing one.
 */
export function luaRecordCodecs(): string {
  const concat = (table: string, fields: readonly string[]) =>
    fields.map((field) => `${table}.${field}`).join(" .. '|' .. ");
  return [
    '-- Generated from hot-layout.ts: the `|` texts, field by field.',
    `local function record(r) return ${concat('r', RECORD_FIELDS)} end`,
    `local function inFlight(c) return 'R|' .. ${concat('c', CALL_FIELDS)} end`,
    '',
  ].join('\n');
}
