import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * Every consumer loop of the project is one of three: the pipeline's runtime (every stage, the
 * delay tiers, the evidence sequencer and the sink run on it), the reader of whole topics outside
 * the pipeline's groups, and the raw kafkajs loop the benchmarks measure the runtime against.
 * Beside them, the readers of a kafka destination's topic (on a second cluster, never the
 * service's): a tenant's ordinary consumer, reading back what was delivered in tests and bench.
 */
describe('consumer loops', () => {
  it('live in three files only, beside the readers of kafka destinations', () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    expect(files.length).toBeGreaterThan(100);
    const withLoop = files.filter((f) => {
      const text = readFileSync(path.join(ROOT, f), 'utf8');
      // a kafkajs consumer run with a batch or message handler
      return /\.run\(\{[\s\S]{0,400}?\beach(Batch|Message)\b/.test(text);
    });
    expect(withLoop.sort()).toEqual(['bench/destinations.ts', 'bench/raw-kafkajs.ts', 'pipeline/runtime/consume.ts', 'platform/kafka/topic-table.ts', 'test/support/brokers.ts']);
  });
});
