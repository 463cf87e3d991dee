import { DEAD_LETTER_STAGES } from '../routes/dead-letters';
import type { ToolHelpers } from './event-type-tools';
import type { ToolContext, ToolSpec } from './tools';

/** The tools of the dead letters of every stage, each through the REST route it mirrors. */
export function deadLetterTools(h: Pick<ToolHelpers, 'rest' | 'tenantPath' | 'id' | 'idempotencyKey' | 'limit' | 'cursor'>): ToolSpec[] {
  const letterId = h.id('The dead letter (dlt_...).');
  const at = (c: ToolContext, rest = '') => h.tenantPath(c, `/dead-letters/${encodeURIComponent(String(c.args.dead_letter_id))}${rest}`);
  return [
    {
      name: 'list_dead_letters', title: 'Dead letters of the tenant', group: 'read', scope: 'read:events',
      description: 'Records a stage of the pipeline set aside (validate, filter, route, deliver, release, retry, evidence-sequencer), newest first, each with its stage, reason, where it was read and whether it was replayed; by stage and time (from inclusive, to exclusive) (as GET /v1/tenants/{tenant_id}/dead-letters). A next_cursor works only with the same filters.',
      input: {
        properties: {
          stage: { type: 'string', enum: [...DEAD_LETTER_STAGES] },
          from: { type: 'string', format: 'date-time', description: 'Letters set aside at or after this time (RFC 3339).' },
          to: { type: 'string', format: 'date-time', description: 'Letters set aside before this time (RFC 3339).' },
          limit: h.limit,
          cursor: h.cursor,
        },
      },
      output: 'DeadLetterList', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', h.tenantPath(c, '/dead-letters'), { query: { stage: c.args.stage, from: c.args.from, to: c.args.to, limit: c.args.limit, cursor: c.args.cursor } }),
    },
    {
      name: 'get_dead_letter', title: 'A dead letter', group: 'read', scope: 'read:events',
      description: 'One dead letter with the key and bytes (base64) of the record it carries.',
      input: { properties: { dead_letter_id: letterId }, required: ['dead_letter_id'] }, output: 'DeadLetterDetail', annotations: { readOnlyHint: true },
      run: (d, c) => h.rest(d, c, 'GET', at(c)),
    },
    {
      name: 'replay_dead_letter', title: 'Put a dead letter back', group: 'write:events', scope: 'write:events',
      description: 'Once its cause is fixed: writes the letter\'s record back, as it was, to the topic it was read from, so the stage that set it aside handles it again. Each record once: a second replay is refused (409).',
      input: { properties: { dead_letter_id: letterId, idempotency_key: h.idempotencyKey }, required: ['dead_letter_id'] }, output: 'DeadLetterReplayed', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
      run: (d, c) => h.rest(d, c, 'POST', at(c, '/replay')),
    },
  ];
}
