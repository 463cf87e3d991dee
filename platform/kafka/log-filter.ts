import { logLevel, type LogEntry, type logCreator } from 'kafkajs';
import type { LogLevel } from '../../core/config';
import type { Logger } from '../../core/log';

/**
 * How long after a client is made its lines about partition leaders and coordinators that are
 * still moving count as start-up: topics just created elect their leaders, and the broker
 * creates its internal topics (transactions, offsets) on first use.
 */
export const KAFKA_STARTUP_WINDOW_MS = 60_000;

/**
 * Answers of a broker whose partition leaders or coordinators are not settled yet. kafkajs
 * refreshes its metadata and retries them by itself, and what still fails after its retries
 * reaches the caller, who reports it; each retried request is only a line of noise.
 */
const SETTLING = /This server does not host this topic-partition|There is no leader for this topic-partition|This server is not the leader for that topic-partition|This is not the correct coordinator for this group|The group coordinator is not available|The coordinator is loading|The leader epoch in the request is (older|newer) than the epoch on the broker/;

/**
 * What becomes of one kafkajs line: `drop`, `startup` (leaders settling at start: dropped, the
 * first explained once at debug), or the level it is written at.
 */
export function judgeKafkaLine(level: logLevel, message: string, error: unknown, msSinceStart: number): 'drop' | 'startup' | LogLevel {
  if (level > logLevel.WARN) return 'drop';
  const text = `${message} ${typeof error === 'string' ? error : ''}`;
  // right after a broker starts its group coordinator is briefly unavailable or loading;
  // kafkajs retries (or restarts the consumer) by itself, so these are not worth a line
  if (/coordinator is not available|coordinator is loading|Restarting the consumer in \d+ms/.test(text) && !/NumberOfRetriesExceeded/.test(text)) return 'drop';
  // producers keep bounded retries on purpose (see createProducer): an outage must reach the caller
  if (/Limiting retries for the idempotent producer/.test(text)) return 'drop';
  // a heartbeat answered while the group rebalances (a member joined or left): kafkajs rejoins
  // by itself and says so at info; an error line per member per rebalance is only noise
  if (message.startsWith('Response Heartbeat') && error === 'The group is rebalancing, so a rejoin is needed') return 'drop';
  // ensureTopics retries what is retriable, takes "already exists" as done, and reports the rest itself
  if (message.startsWith('Response CreateTopics') && error === 'Topic creation errors') return 'drop';
  // the request-level line of a retried answer ("Response Metadata(key: 3, version: 6)")
  if (message.startsWith('Response ') && typeof error === 'string' && SETTLING.test(error)) {
    // later (a broker restarted, leaders moved) it is worth seeing, as the warning it is
    return msSinceStart < KAFKA_STARTUP_WINDOW_MS ? 'startup' : 'warn';
  }
  return level === logLevel.ERROR ? 'error' : 'warn';
}

/**
 * The kafkajs log creator: lines through `log` (this process's own output only, never the
 * `logs` topic, which Kafka itself carries), or as JSON on stderr without one (the CLI, whose
 * stdout is its answer).
 */
export function kafkaLogCreator(options: { log?: Logger; now?: () => number } = {}): logCreator {
  const now = options.now ?? Date.now;
  const startedAt = now();
  let explained = false;
  return () => ({ namespace, level, log: entry }: LogEntry) => {
    const { message, timestamp, logger: _logger, ...rest } = entry;
    const verdict = judgeKafkaLine(level, message, rest.error, now() - startedAt);
    if (verdict === 'drop') return;
    if (verdict === 'startup') {
      if (explained) return;
      explained = true;
      options.log?.printOnly('debug', 'kafka partitions still electing leaders; the client retries (such lines are left out during start-up)', { source: 'kafkajs', namespace, kafka_message: message, ...rest });
      return;
    }
    if (options.log) options.log.printOnly(verdict, message, { source: 'kafkajs', namespace, ...rest });
    else process.stderr.write(`${JSON.stringify({ level: verdict, ts: timestamp, source: 'kafkajs', message, ...rest })}\n`);
  };
}
