import type { TestService } from './service';

/** Creates one object through the API (POST under the tenant) and answers its id; anything but 201 throws. */
export async function makeObject(svc: TestService, path: string, body: unknown, options: { tenantId?: string; key?: string } = {}): Promise<string> {
  const res = await svc.api('POST', `/v1/tenants/${options.tenantId ?? svc.tenantId}${path}`, body, { key: options.key });
  if (res.status !== 201) throw new Error(`seed ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** One object of each kind a tenant owns: a destination, an ingester routed to it, a flow, a saved payload. */
export async function seedObjects(svc: TestService, name = 'fuzz-seed'): Promise<{ dest: string; ingester: string; flow: string; payload: string }> {
  const dest = await makeObject(svc, '/destinations', { name, url: 'http://127.0.0.1:9/seed' });
  const ingester = await makeObject(svc, '/ingesters', { name, provider: 'none', config: {}, destination_ids: [dest] });
  const flow = await makeObject(svc, '/delivery-flows', { name, ingester_id: ingester, destination_ids: [dest] });
  const payload = await makeObject(svc, '/saved-payloads', { name, payload: { a: 1 } });
  return { dest, ingester, flow, payload };
}
