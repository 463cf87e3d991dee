import { round } from './stats';

/** Kafka requests a service process has had answered, by `<client> <API>`, from its `/metrics`. */
export async function kafkaRequests(serviceUrl: string): Promise<Map<string, number>> {
  const res = await fetch(`${serviceUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^hookline_kafka_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    counts.set(`${labels.client} ${labels.api}`, Number(m[2]));
  }
  if (counts.size === 0) throw new Error('GET /metrics has no hookline_kafka_requests_total series');
  return counts;
}

/** The four figures shown: produce, fetch and offset-commit requests, and every other kind (heartbeats, metadata, offsets, ...). */
export interface RequestsPerEvent {
  total: number;
  produce: number;
  fetch: number;
  offset_commit: number;
  other: number;
  /** Every `<client> <API>` that moved, per event. */
  by_api: Record<string, number>;
}

/** Requests answered between two readings, per delivered event. */
export function requestsPerEvent(before: Map<string, number>, after: Map<string, number>, events: number): RequestsPerEvent {
  const out: RequestsPerEvent = { total: 0, produce: 0, fetch: 0, offset_commit: 0, other: 0, by_api: {} };
  for (const [name, n] of after) {
    const d = n - (before.get(name) ?? 0);
    if (d <= 0) continue;
    const api = name.slice(name.indexOf(' ') + 1);
    const kind = api === 'Produce' ? 'produce' : api === 'Fetch' ? 'fetch' : api === 'OffsetCommit' ? 'offset_commit' : 'other';
    out[kind] += d;
    out.total += d;
    out.by_api[name] = round(d / events, 3);
  }
  for (const k of ['total', 'produce', 'fetch', 'offset_commit', 'other'] as const) out[k] = round(out[k] / events, 3);
  return out;
}

export function requestsText(r: RequestsPerEvent): string {
  return `${r.total} (produce ${r.produce}, fetch ${r.fetch}, offset commit ${r.offset_commit}, other ${r.other})`;
}
