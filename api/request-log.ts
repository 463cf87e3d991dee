import type { NextFunction, Request, Response } from 'express';
import { newId } from '../core/ids';
import type { Logger } from '../core/log';

/**
 * Gives every request its id (the `x-request-id` header of the answer, a problem's `instance`)
 * and a logger whose lines carry it as `request_id`, so that a reader finds every line one
 * request wrote. Other context (a trace id) can be added to that logger the same way.
 */
export function requestContext(log: Logger) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    const id = newId('request');
    res.setHeader('x-request-id', id);
    res.locals.log = log.child({ request_id: id });
    next();
  };
}

/** The logger of the request `res` answers; `fallback` where no request context was set. */
export function requestLog(res: Response, fallback: Logger): Logger {
  return (res.locals.log as Logger | undefined) ?? fallback;
}
