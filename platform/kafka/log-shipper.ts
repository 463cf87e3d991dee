import type { Producer } from 'kafkajs';
import { newId } from '../../core/ids';
import type { LogRecord } from '../../core/log';
import type { AvroCodec } from '../avro/codec';
import type { LogEntry } from '../avro/records';

const KNOWN = new Set(['ts', 'level', 'msg', 'stage', 'tenant_id', 'event_id', 'delivery_id', 'destination_id', 'ingester_id', 'correlation_id']);

export function toLogEntry(r: LogRecord): LogEntry {
  const fields: Record<string, unknown> = {};
  for (const k in r) if (!KNOWN.has(k) && r[k] !== undefined) fields[k] = r[k];
  const s = (v: unknown) => (typeof v === 'string' ? v : null);
  const ts = Date.parse(r.ts);
  return {
    id: newId('log', ts),
    ts,
    level: r.level,
    message: r.msg,
    stage: s(r.stage),
    tenant_id: s(r.tenant_id) ?? '',
    event_id: s(r.event_id),
    delivery_id: s(r.delivery_id),
    destination_id: s(r.destination_id),
    ingester_id: s(r.ingester_id),
    correlation_id: s(r.correlation_id),
    fields: JSON.stringify(fields),
  };
}

/**
 * Ships log lines to the `logs` topic for the logs API, in the background: lines are gathered
 * for `intervalMs` and sent in one request. Logging never waits on Kafka; when Kafka is away
 * the oldest lines beyond `maxBuffered` are dropped and counted. Sent with acks=all: a line the
 * logs API shows survives the loss of the leader.
 */
export class LogShipper {
  private buffer: LogEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  dropped = 0;

  constructor(
    private readonly producer: Producer,
    private readonly codec: AvroCodec,
    private readonly topic: string,
    private readonly options: { intervalMs?: number; maxBuffered?: number } = {},
  ) {}

  readonly sink = (record: LogRecord): void => {
    if (record.level === 'debug') return;
    this.buffer.push(toLogEntry(record));
    const max = this.options.maxBuffered ?? 10_000;
    if (this.buffer.length > max) {
      this.dropped += this.buffer.length - max;
      this.buffer.splice(0, this.buffer.length - max);
    }
    this.timer ??= setTimeout(() => void this.flush(), this.options.intervalMs ?? 200);
  };

  async flush(): Promise<void> {
    this.timer = undefined;
    if (this.sending) await this.sending;
    const entries = this.buffer;
    this.buffer = [];
    if (entries.length === 0) return;
    this.sending = (async () => {
      try {
        const messages = await Promise.all(entries.map(async (e) => ({ key: e.tenant_id, value: await this.codec.encode(this.topic, 'LogEntry', e) })));
        await this.producer.send({ topic: this.topic, acks: -1, messages });
      } catch {
        this.dropped += entries.length;
      } finally {
        this.sending = undefined;
      }
    })();
    await this.sending;
  }
}
