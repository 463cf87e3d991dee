import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Router } from 'express';
import { AppError } from '../../core/errors';
import { exposition } from '../../platform/metrics/metrics';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Whether `authorization` carries `Bearer <token>`. Both sides are hashed first, so the
 * comparison takes the same time whatever the length or the first differing byte.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  return timingSafeEqual(digest(m?.[1] ?? ''), digest(token)) && m?.[1] !== undefined;
}

/**
 * `GET /metrics`, on every process: the Prometheus text format of this process's registry.
 * With `token` (METRICS_TOKEN), a request without `Authorization: Bearer <token>` gets 401.
 */
export function metricsRouter(token: string | undefined): Router {
  const router = express.Router();
  router.get('/metrics', async (req, res) => {
    if (token !== undefined && !bearerMatches(req.headers.authorization, token)) {
      res.setHeader('www-authenticate', req.headers.authorization ? 'Bearer error="invalid_token"' : 'Bearer');
      throw new AppError('unauthorized', req.headers.authorization ? 'the metrics token is not valid' : 'the Authorization header is missing: this endpoint takes the metrics token (METRICS_TOKEN) as a bearer token');
    }
    const { contentType, text } = await exposition();
    res.status(200).setHeader('content-type', contentType).setHeader('cache-control', 'no-store').send(text);
  });
  return router;
}
