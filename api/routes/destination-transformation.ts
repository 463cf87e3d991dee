import express, { type Router } from 'express';
import { notFound, validationError } from '../../core/errors';
import { sha256Hex } from '../../core/stored-body';
import type { ConfigStore } from '../../platform/config-store/config-store';
import { prepare } from '../../pipeline/deliver/transform/apply';
import type { Transformer } from '../../pipeline/deliver/transform/transformer';
import { authOf, requireResource, requireScope } from '../auth';
import { validateBody } from '../validation';

interface TestBody {
  payload_id?: string;
  body?: unknown;
  content_type?: string;
  transformation?: string;
}

/**
 * A dry run of a destination's transformation: what an attempt would send for a saved payload or
 * a given body, or why it would fail. It runs in the same sandbox, with the same limits, as an
 * attempt; nothing is sent or kept.
 */
export function destinationTransformationRouter(store: ConfigStore, transformer: Transformer | undefined): Router {
  const router = express.Router({ mergeParams: true });

  router.post('/:destinationId/transformation/test', requireScope('write:destinations'), async (req, res) => {
    const key = authOf(res);
    const id = String(req.params.destinationId);
    const destination = store.get('destination', key.tenant_id, id);
    if (!destination) throw notFound(`destination ${id}`);
    requireResource(res, destination.id);
    const check = validateBody<TestBody>('testDestinationTransformation', req.body);
    const given = check.body;
    const hasBody = Object.prototype.hasOwnProperty.call(given, 'body');
    if ((given.payload_id === undefined) === !hasBody) check.fail('body', 'give exactly one of payload_id and body');
    check.done();
    let body: Buffer;
    let contentType: string;
    if (given.payload_id !== undefined) {
      const payload = store.get('saved_payload', key.tenant_id, given.payload_id);
      if (!payload) throw notFound(`saved payload ${given.payload_id}`);
      body = Buffer.from(JSON.stringify(payload.payload));
      contentType = given.content_type ?? 'application/json';
    } else if (typeof given.body === 'string') {
      body = Buffer.from(given.body);
      contentType = given.content_type ?? 'text/plain';
    } else {
      body = Buffer.from(JSON.stringify(given.body));
      contentType = given.content_type ?? 'application/json';
    }
    if (given.transformation !== undefined && !transformer) throw validationError([{ field: 'transformation', message: 'cannot be run: this process runs no transformation sandbox' }]);
    const now = Date.now();
    const made = await prepare(destination, { event_id: 'evt_test', delivery_id: 'dlv_test', destination_id: destination.id, attempt: 1, content_type: contentType, body, received_at: now }, transformer, given.transformation ?? destination.transformation);
    const cpu_ms = Math.round(made.cpuMs * 1000) / 1000;
    if (made.kind === 'fail') return void res.json({ outcome: 'fail', error: made.error, cpu_ms });
    if (made.kind === 'drop') return void res.json({ outcome: 'drop', cpu_ms });
    const { sent } = made;
    res.json({
      outcome: 'send',
      body: sent.body.toString('utf8'),
      body_sha256: sha256Hex(sent.body),
      ...(sent.content_type ? { content_type: sent.content_type } : {}),
      headers: sent.headers,
      ...(sent.method ? { method: sent.method } : {}),
      ...(sent.path ? { path: sent.path } : {}),
      cpu_ms,
    });
  });

  return router;
}
