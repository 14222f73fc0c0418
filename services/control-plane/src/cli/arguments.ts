/** Bad input at the command line: printed as one line, exit status 2. */
export class UsageError extends Error {}

export interface ParsedArguments {
  positionals: string[];
  options: Record<string, string | boolean | undefined>;
}

/** Every option of `tollgate-admin`: those that take a value and the flags. */
const VALUE_OPTIONS = new Set([
  'password',
  'name',
  'scope',
  'note',
  'idempotency-key',
  'requests-per-minute',
  'concurrency',
  'max-output-tokens',
  'max-request-bytes',
]);
const FLAGS = new Set(['off', 'help']);
const NUMBER = /^-[0-9]+$/;

/**
 * The command line: `--name value` or `--name=value`, flags, `-h`, and everything else (negative
 * amounts such as `-500` included) as positionals. Unknown options and options missing their
 * value are usage errors, never exceptions of a parser.
 */
export function parseArguments(args: string[]): ParsedArguments {
  const positionals: string[] = [];
  const options: Record<string, string | boolean | undefined> = {};
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] ?? '';
    if (arg === '--') {
      positionals.push(...args.slice(index + 1));
      break;
    }
    if (arg === '-h') {
      options.help = true;
      continue;
    }
    if (!arg.startsWith('-') || NUMBER.test(arg) || arg === '-') {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
    const [name = '', inline] = splitOnce(arg.slice(2));
    if (FLAGS.has(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      options[name] = true;
    } else if (VALUE_OPTIONS.has(name)) {
      const value = inline ?? args[index + 1];
      if (value === undefined || (inline === undefined && value.startsWith('--'))) {
        throw new UsageError(`--${name} needs a value`);
      }
      if (inline === undefined) index += 1;
      options[name] = value;
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return { positionals, options };
}

function splitOnce(text: string): [string, string | undefined] {
  const at = text.indexOf('=');
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
