import express, { type Request, type Response, type NextFunction, type Router } from 'express';
import { AppError } from '../../core/errors';
import { newId } from '../../core/ids';
import type { Ingester } from '../../core/model';
import type { Topics } from '../../core/topics';
import type { Logger } from '../../core/log';
import type { AvroCodec } from '../../platform/avro/codec';
import type { Header, WebhookEvent } from '../../platform/avro/records';
import type { BatchingProducer } from '../../platform/kafka/batching-producer';
import { transition } from '../transitions';
import { correlationIdOf } from './correlation';

export interface IngesterFinder {
  find(kind: 'ingester', id: string): Ingester | undefined;
  /** Catches up with configuration written elsewhere (a just-created ingester). */
  sync(): Promise<void>;
}

export interface IngestDeps {
  topics: Topics;
  config: IngesterFinder;
  codec: AvroCodec;
  producer: BatchingProducer;
  maxBodyBytes: number;
  log: Logger;
}

/** Request headers in arrival order with lower-case names; repeated headers stay repeated. */
function headersOf(req: Request): Header[] {
  const out: Header[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) out.push({ name: raw[i]!.toLowerCase(), value: raw[i + 1]! });
  return out;
}

/**
 * The Hook URLs: POST /v1/hooks/{ingester_id}. The sender gets its 2xx only after Kafka has
 * acknowledged the event (acks=all) together with its `received` transition.
 */
export function ingestRouter(deps: IngestDeps): Router {
  const router = express.Router();
  const body = express.raw({ type: () => true, limit: deps.maxBodyBytes });

  router.post('/v1/hooks/:ingesterId', body, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const ingesterId = String(req.params.ingesterId);
      let ingester = deps.config.find('ingester', ingesterId);
      if (!ingester) {
        await deps.config.sync();
        ingester = deps.config.find('ingester', ingesterId);
      }
      if (!ingester) throw new AppError('not-found', `no ingester ${ingesterId}`);
      const payload: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const event: WebhookEvent = {
        event_id: newId('event'),
        tenant_id: ingester.tenant_id,
        ingester_id: ingester.id,
        correlation_id: correlationIdOf(req.headers as Record<string, string>),
        received_at: Date.now(),
        method: req.method,
        query: req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '',
        headers: headersOf(req),
        content_type: req.headers['content-type'] ?? null,
        body: payload,
        source_ip: req.socket.remoteAddress ?? null,
        event_type: null,
      };
      const received = transition(deps.topics, event, 'received', { at: event.received_at });
      const [eventValue, transitionValue] = await Promise.all([
        deps.codec.encode(deps.topics.received, 'WebhookEvent', event),
        deps.codec.encode(received.topic, 'EventTransition', received.value),
      ]);
      await deps.producer.send([
        { topic: deps.topics.received, messages: [{ key: `${event.tenant_id}/${event.ingester_id}`, value: eventValue }] },
        { topic: received.topic, messages: [{ key: received.key, value: transitionValue }] },
      ]);
      deps.log.debug('received', { tenant_id: event.tenant_id, event_id: event.event_id, ingester_id: event.ingester_id, correlation_id: event.correlation_id, bytes: payload.length });
      res.status(202).setHeader('x-correlation-id', event.correlation_id).json({ event_id: event.event_id, correlation_id: event.correlation_id, status: 'received' });
    } catch (err) {
      // Kafka not acknowledging is a passing condition: the sender should retry, not give up
      if (err instanceof Error && err.name.startsWith('KafkaJS')) next(new AppError('service-unavailable', 'the event could not be stored durably; retry shortly', {}, true, { cause: err }));
      else next(err);
    }
  });
  return router;
}
