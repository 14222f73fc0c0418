// The long mode of the billing differential test (docs/billing/rules.md, R22):
//   pnpm test:money [--runs N] [--seed S]
// runs N random operation sequences (default 500) against the reference model and each engine,
// from seed S (default: a new one, printed by fast-check on a failure so it can be replayed).
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '500' }, seed: { type: 'string' } },
});
if (!/^\d+$/.test(values.runs) || (values.seed !== undefined && !/^-?\d+$/.test(values.seed))) {
  console.error('usage: pnpm test:money [--runs N] [--seed S]   (integers)');
  process.exit(2);
}
const result = spawnSync(
  'pnpm',
  ['vitest', 'run', '--project', 'control-plane', 'src/modules/billing/billing.differential.test.ts'],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      MONEY_RUNS: values.runs,
      ...(values.seed === undefined ? {} : { MONEY_SEED: values.seed }),
    },
  },
);
process.exit(result.status ?? 1);
