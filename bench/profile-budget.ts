/**
 * The CPU budget of a service process from a V8 CPU profile (`BENCH_PROFILE_DIR`): where its busy
 * time went, by stage (the nearest frame of the pipeline's own code on the stack: ingest, the
 * validate -> filter -> route chain, deliver, retry and release, the evidence sequencer, the sink,
 * the API, the runtime) and across stages by kind of work (the file the time was spent in: the
 * Kafka client, Avro, outbound and inbound HTTP, logging, tracing, metrics, ClickHouse, hashing,
 * garbage collection). With the number of delivered events, in µs per event.
 *
 *   tsx bench/profile-budget.ts <file.cpuprofile> [delivered events]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Kind of work by where the code is: the first pattern that matches the frame's URL (or name) wins. */
const KINDS: [string, RegExp][] = [
  ['kafka client', /node_modules\/kafkajs\/|platform\/kafka\//],
  ['avro', /node_modules\/avsc\/|platform\/avro\//],
  ['http out (undici)', /node_modules\/undici\/|node:internal\/deps\/undici/],
  ['http in (node:http, express)', /node_modules\/(express|router|body-parser|raw-body|finalhandler|send|on-finished|qs|type-is|content-type)\/|node:_http_|node:internal\/http/],
  ['logging', /node_modules\/(pino|sonic-boom|thread-stream)|core\/log\.ts/],
  ['tracing', /node_modules\/@opentelemetry\/|platform\/tracing\//],
  ['metrics', /node_modules\/prom-client\/|platform\/metrics\//],
  ['clickhouse', /node_modules\/(@clickhouse|chdb)\/|platform\/clickhouse\//],
  ['redis', /node_modules\/(ioredis|redis-parser|@ioredis)\/|platform\/redis\//],
  ['sockets and streams', /node:net|node:internal\/(stream|streams|net|tcp_wrap)|node:stream|node:internal\/stream_base_commons/],
  ['crypto and hashing', /node:crypto|node:internal\/crypto|core\/merkle|core\/signing|evidence-leaf/],
];
const STAGES: [string, RegExp][] = [
  ['ingest (Hook URL)', /pipeline\/ingest\//],
  ['chain (validate, filter, route)', /pipeline\/(validate|filter|route)\//],
  ['deliver', /pipeline\/deliver\//],
  ['retry and release', /pipeline\/(retry|release)\//],
  ['evidence sequencer', /pipeline\/evidence\//],
  ['sink', /pipeline\/sink\//],
  ['API', /\/api\//],
];

function main(): void {
  const [file, eventsArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/profile-budget.ts <file.cpuprofile> [delivered events]');
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const kindOf = new Map<number, string>();
  const stageOf = new Map<number, string>();
  const classify = (id: number): [string, string] => {
    const known = kindOf.get(id);
    if (known !== undefined) return [known, stageOf.get(id)!];
    const n = byId.get(id)!;
    const { url, functionName } = n.callFrame;
    let kind: string | undefined;
    let stage: string | undefined;
    if (functionName === '(garbage collector)') kind = 'garbage collection';
    else if (functionName === '(idle)' || functionName === '(program)' || functionName === '(root)') kind = functionName;
    else kind = KINDS.find(([, re]) => re.test(url))?.[0];
    if (!url.includes('/node_modules/')) stage = STAGES.find(([, re]) => re.test(url))?.[0];
    const up = parent.get(id);
    const [upKind, upStage] = up === undefined ? ['other', 'not on a stage\'s stack (Kafka answers, sockets, timers)'] : classify(up);
    // the innermost library frame names the kind of work; the innermost stage frame the stage
    kind ??= url === '' && upKind !== '(root)' ? upKind : upKind === '(root)' || upKind === '(idle)' || upKind === '(program)' ? 'other' : upKind;
    if (kind === 'other' && url !== '' && !/node_modules/.test(url) && !url.startsWith('node:')) kind = 'pipeline and runtime code';
    stage ??= upStage;
    kindOf.set(id, kind);
    stageOf.set(id, stage);
    return [kind, stage];
  };
  const kinds = new Map<string, number>();
  const stages = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const us = p.timeDeltas[i + 1] ?? 0;
    const [kind, stage] = classify(p.samples[i]!);
    if (kind === '(idle)') continue;
    busy += us;
    kinds.set(kind, (kinds.get(kind) ?? 0) + us);
    stages.set(stage, (stages.get(stage) ?? 0) + us);
  }
  const events = eventsArg ? Number(eventsArg) : undefined;
  const row = (name: string, us: number) => `| ${name} | ${((100 * us) / busy).toFixed(1)}% | ${events ? (us / events).toFixed(0) : ''} |`;
  const table = (title: string, m: Map<string, number>) =>
    [`| ${title} | share of busy time | µs per delivered event |`, '| --- | ---: | ---: |', ...[...m].sort((a, b) => b[1] - a[1]).map(([k, us]) => row(k, us))].join('\n');
  process.stdout.write(`${file}: ${(busy / 1e6).toFixed(1)} s busy of ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s${events ? `, ${events} delivered events` : ''}\n\n${table('stage', stages)}\n\n${table('kind of work', kinds)}\n`);
}

main();
