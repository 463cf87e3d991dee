import type { TestService } from './service';
import { eventually } from './service';

/** A destination and a `none`-provider ingester routed to it (each with `extra` members of its own); returns what a test needs. */
export async function destinationWithIngester(svc: TestService, name: string, url: string, extra: Record<string, unknown> = {}, ingesterExtra: Record<string, unknown> = {}) {
  const dest = await svc.api('POST', `/v1/tenants/${svc.tenantId}/destinations`, { name, url, ...extra });
  if (dest.status !== 201) throw new Error(`destination: ${dest.status} ${JSON.stringify(dest.body)}`);
  const ing = await svc.api('POST', `/v1/tenants/${svc.tenantId}/ingesters`, { name: `${name} in`, provider: 'none', config: {}, destination_ids: [dest.body.id], ...ingesterExtra });
  if (ing.status !== 201) throw new Error(`ingester: ${ing.status} ${JSON.stringify(ing.body)}`);
  return { destinationId: dest.body.id as string, secret: dest.body.signing_secret as string, ingesterId: ing.body.id as string, hookUrl: `${svc.url}/v1/hooks/${ing.body.id}` };
}

export async function sendEvent(hookUrl: string, body: unknown = { hello: 'world' }): Promise<string> {
  const res = await fetch(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 202) throw new Error(`hook answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { event_id: string }).event_id;
}

export interface TransitionRow {
  state: string;
  delivery_id: string;
  reason: string | null;
}

export async function transitionsOf(svc: TestService, eventId: string): Promise<TransitionRow[]> {
  const rs = await svc.clickhouse.query({
    query: `SELECT state, delivery_id, reason FROM ${svc.config.clickhouseDatabase}.event_transitions FINAL WHERE event_id = {id:String} ORDER BY at, state`,
    query_params: { id: eventId },
    format: 'JSONEachRow',
  });
  return rs.json<TransitionRow>();
}

/** Waits until the event has passed through every state in `states`. */
export function waitForStates(svc: TestService, eventId: string, states: string[], timeoutMs = 30_000): Promise<TransitionRow[]> {
  return eventually(`event ${eventId} reaching ${states.join(', ')}`, async () => {
    const rows = await transitionsOf(svc, eventId);
    const seen = new Set(rows.map((r) => r.state));
    return states.every((s) => seen.has(s)) ? rows : undefined;
  }, timeoutMs);
}

export interface AttemptRow {
  delivery_id: string;
  attempt_number: number;
  status: string;
  response_code: number | null;
}

export async function attemptsOf(svc: TestService, eventId: string): Promise<AttemptRow[]> {
  const rs = await svc.clickhouse.query({
    query: `SELECT delivery_id, attempt_number, status, response_code FROM ${svc.config.clickhouseDatabase}.deliveries FINAL WHERE event_id = {id:String} ORDER BY delivery_id, attempt_number`,
    query_params: { id: eventId },
    format: 'JSONEachRow',
  });
  return rs.json<AttemptRow>();
}
