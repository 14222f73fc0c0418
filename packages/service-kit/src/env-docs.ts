import { z } from 'zod';

/**
 * The configuration page (docs/operations/configuration.md) is written from the services' own
 * environment schemas, so it cannot list a variable, a default or a range the code does not have.
 * `pnpm docs:generate` writes it; each service has a test that fails when its section drifts.
 */

/** One environment variable as the configuration page shows it. */
export interface EnvVariable {
  readonly name: string;
  /** `required`, `unset`, or the default as written in the environment. */
  readonly default: string;
  /** What values are accepted, in words. */
  readonly accepts: string;
  readonly description: string;
}

interface JsonSchemaProperty {
  description?: string;
  default?: unknown;
  type?: string;
  enum?: unknown[];
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
}

/** Every variable of a zod environment schema, in the schema's order. */
export function describeEnvSchema(schema: z.ZodObject): EnvVariable[] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchemaProperty>;
    required?: string[];
  };
  const required = new Set(json.required ?? []);
  return Object.entries(json.properties).map(([name, property]) => {
    if (!property.description) {
      throw new Error(`${name} has no description: give it one with .describe() in its config.ts`);
    }
    return {
      name,
      default: required.has(name)
        ? 'required'
        : property.default === undefined
          ? 'unset'
          : String(property.default),
      accepts: acceptsOf(property),
      description: property.description,
    };
  });
}

function acceptsOf(property: JsonSchemaProperty): string {
  if (property.enum) {
    const values = property.enum.map(String);
    if (values.length === 4 && ['true', 'false', '1', '0'].every((value) => values.includes(value))) {
      return '`true` or `false` (`1`, `0`)';
    }
    return values.map((value) => `\`${value}\``).join(', ');
  }
  if (property.type === 'integer' || property.type === 'number') {
    const low =
      property.minimum ??
      (property.exclusiveMinimum === undefined ? undefined : property.exclusiveMinimum + 1);
    const high =
      property.maximum !== undefined && property.maximum < Number.MAX_SAFE_INTEGER
        ? property.maximum
        : undefined;
    if (low !== undefined && high !== undefined) return `integer, ${low}-${high}`;
    if (low !== undefined) return `integer, ${low} or more`;
    return 'integer';
  }
  if (property.format === 'uri') return 'URL';
  if (property.pattern) return `text matching \`${property.pattern}\``;
  if (property.minLength) return `text, at least ${property.minLength} characters`;
  return 'text';
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** A section of the configuration page: its heading, where the variables are read, the table. */
export function renderEnvSection(title: string, source: string, variables: readonly EnvVariable[]): string {
  const rows = variables.map(
    (variable) =>
      `| \`${variable.name}\` | ${variable.default === 'required' || variable.default === 'unset' ? variable.default : `\`${cell(variable.default)}\``} | ${cell(variable.accepts)} | ${cell(variable.description)} |`,
  );
  return [
    `## ${title}`,
    '',
    `Read by \`${source}\`.`,
    '',
    '| variable | default | accepts | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

/** The section of a page under `## <title>`, up to the next `## ` heading (as renderEnvSection wrote it). */
export function readPageSection(page: string, title: string): string | undefined {
  const start = page.indexOf(`\n## ${title}\n`);
  if (start < 0) return undefined;
  const next = page.indexOf('\n## ', start + 1);
  return `${page.slice(start + 1, next < 0 ? undefined : next).trimEnd()}\n`;
}
