import { logLevel, type LogEntry } from 'kafkajs';
import { Logger } from '../../core/log';
import { judgeKafkaLine, kafkaLogCreator, KAFKA_STARTUP_WINDOW_MS } from '../../platform/kafka/log-filter';

const NOT_HOSTED = 'This server does not host this topic-partition';

function entry(level: logLevel, message: string, extra: Record<string, unknown> = {}): LogEntry {
  return { namespace: 'Connection', level, label: level === logLevel.ERROR ? 'ERROR' : 'WARN', log: { timestamp: new Date().toISOString(), logger: 'kafkajs', message, broker: '127.0.0.1:9092', clientId: 'hookline-1', ...extra } };
}

describe('the kafkajs line filter', () => {
  it.each([
    ['a partition without its leader yet, at start', logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', NOT_HOSTED, 1_000, 'startup'],
    ['the transaction coordinator not settled, at start', logLevel.ERROR, 'Response InitProducerId(key: 22, version: 1)', 'This is not the correct coordinator for this group', 4_000, 'startup'],
    ['a leader election, at start', logLevel.ERROR, 'Response Produce(key: 0, version: 7)', 'There is no leader for this topic-partition as we are in the middle of a leadership election', 2_000, 'startup'],
    ['a leader that moved later on, as the warning it is', logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', NOT_HOSTED, KAFKA_STARTUP_WINDOW_MS + 1, 'warn'],
    ['a group coordinator still loading', logLevel.ERROR, 'Response JoinGroup(key: 11, version: 5)', 'The coordinator is loading and hence can\'t process requests', 1_000, 'drop'],
    ['topics that could not be created, which ensureTopics reports itself', logLevel.ERROR, 'Response CreateTopics(key: 19, version: 3)', 'Topic creation errors', 1_000, 'drop'],
    ['a heartbeat during a rebalance, at any time', logLevel.ERROR, 'Response Heartbeat(key: 12, version: 3)', 'The group is rebalancing, so a rejoin is needed', KAFKA_STARTUP_WINDOW_MS + 1, 'drop'],
    ['a rebalance answer to another request', logLevel.ERROR, 'Response OffsetCommit(key: 8, version: 5)', 'The group is rebalancing, so a rejoin is needed', 1_000, 'error'],
    ['a record too large, at start too', logLevel.ERROR, 'Response Produce(key: 0, version: 7)', 'The request included a message larger than the max message size the server will accept', 1_000, 'error'],
    ['a refused connection', logLevel.ERROR, 'Connection error: connect ECONNREFUSED 127.0.0.1:9092', undefined, 1_000, 'error'],
    ['a retry that ran out', logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded: The group coordinator is not available', 'The group coordinator is not available', 90_000, 'error'],
    ['a warning of its own', logLevel.WARN, 'Topic metadata not found', undefined, 1_000, 'warn'],
  ])('%s', (_what, level, message, error, ms, verdict) => {
    expect(judgeKafkaLine(level, message, error, ms)).toBe(verdict);
  });

  it('leaves the start-up noise out, explains it once at debug, and keeps real errors', () => {
    const lines: string[] = [];
    let now = 0;
    const create = kafkaLogCreator({ log: new Logger('debug', {}, (line) => lines.push(line)), now: () => now });
    const write = create(logLevel.WARN);
    for (let i = 0; i < 8; i++) write(entry(logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', { error: NOT_HOSTED, correlationId: i }));
    write(entry(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', { error: 'The request included a message larger than the max message size the server will accept' }));
    now = KAFKA_STARTUP_WINDOW_MS + 1;
    write(entry(logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', { error: NOT_HOSTED }));
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'kafka partitions still electing leaders; the client retries (such lines are left out during start-up)'],
      ['error', 'Response Produce(key: 0, version: 7)'],
      ['warn', 'Response Metadata(key: 3, version: 6)'],
    ]);
    expect(parsed[1]).toMatchObject({ source: 'kafkajs', namespace: 'Connection', broker: '127.0.0.1:9092', error: expect.stringContaining('larger than the max message size') });
  });

  it('writes nothing of the start-up noise at the info level', () => {
    const lines: string[] = [];
    const write = kafkaLogCreator({ log: new Logger('info', {}, (line) => lines.push(line)) })(logLevel.WARN);
    write(entry(logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', { error: NOT_HOSTED }));
    write(entry(logLevel.ERROR, 'Response InitProducerId(key: 22, version: 1)', { error: 'This is not the correct coordinator for this group' }));
    expect(lines).toEqual([]);
  });
});
