import type { Message, Producer } from 'kafkajs';

interface Pending {
  topicMessages: { topic: string; messages: Message[] }[];
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Gathers the records of concurrent callers into one Kafka request (kafkajs has no linger of
 * its own): records wait at most one turn of the event loop, or `lingerMs` when set, and at
 * most `maxBatch` go out in one request. Each caller's promise settles with its request, acks=all.
 */
export class BatchingProducer {
  private queue: Pending[] = [];
  private queued = 0;
  private timer: NodeJS.Immediate | NodeJS.Timeout | undefined;

  constructor(
    private readonly producer: Producer,
    private readonly options: { maxBatch?: number; lingerMs?: number } = {},
  ) {}

  send(topicMessages: { topic: string; messages: Message[] }[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ topicMessages, resolve, reject });
      this.queued += topicMessages.reduce((n, t) => n + t.messages.length, 0);
      if (this.queued >= (this.options.maxBatch ?? 500)) this.flush();
      else if (!this.timer) {
        const linger = this.options.lingerMs ?? 0;
        this.timer = linger > 0 ? setTimeout(() => this.flush(), linger) : setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer as NodeJS.Timeout);
      clearImmediate(this.timer as NodeJS.Immediate);
      this.timer = undefined;
    }
    const batch = this.queue;
    this.queue = [];
    this.queued = 0;
    if (batch.length === 0) return;
    const byTopic = new Map<string, Message[]>();
    for (const p of batch) {
      for (const t of p.topicMessages) {
        let list = byTopic.get(t.topic);
        if (!list) byTopic.set(t.topic, (list = []));
        list.push(...t.messages);
      }
    }
    this.producer
      .sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) })
      .then(
        () => batch.forEach((p) => p.resolve()),
        (err: unknown) => batch.forEach((p) => p.reject(err)),
      );
  }
}
