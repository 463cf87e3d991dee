import { createHooklineClient, ProblemError, unwrap, type ApiResult, type HooklineClient } from '../../clients/typescript/src';
import { startReceiver, type Receiver } from '../support/receiver';
import { startTestService, type TestService } from '../support/service';

/** The typed client of clients/typescript against the running API: its paths, bodies, key and problems. */
describe('typed client', () => {
  let svc: TestService;
  let receiver: Receiver;
  let client: HooklineClient;
  beforeAll(async () => {
    [svc, receiver] = await Promise.all([startTestService(), startReceiver()]);
    client = createHooklineClient({ baseUrl: svc.url, apiKey: await svc.newKey(['read:destinations', 'write:destinations']) });
  });
  afterAll(async () => {
    await Promise.all([svc?.stop(), receiver?.close()]);
  });

  /** What unwrap throws for the answer of `call`. */
  const refusal = async (call: Promise<ApiResult<unknown>>): Promise<unknown> => {
    const answer = await call;
    try {
      unwrap(answer);
    } catch (err) {
      return err;
    }
    throw new Error(`the API accepted the request (${answer.response.status})`);
  };

  it('creates a destination, lists it and reads it back', async () => {
    const tenant_id = svc.tenantId;
    const created = unwrap(await client.POST('/v1/tenants/{tenant_id}/destinations', { params: { path: { tenant_id } }, body: { name: 'typed client', url: receiver.url } }));
    expect(created).toMatchObject({ id: expect.stringMatching(/^dst_/), name: 'typed client', url: receiver.url, status: 'active', signing_secret: expect.stringMatching(/^whsec_/) });

    const listed = unwrap(await client.GET('/v1/tenants/{tenant_id}/destinations', { params: { path: { tenant_id } } }));
    expect(listed.destinations.map((d) => d.id)).toContain(created.id);

    const read = unwrap(await client.GET('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: { tenant_id, destination_id: created.id } } }));
    expect(read).toMatchObject({ id: created.id, name: 'typed client', url: receiver.url, enabled: true });
  });

  it('throws a refusal as a ProblemError with its status and problem document', async () => {
    const refused = await refusal(client.GET('/v1/tenants/{tenant_id}/destinations/{destination_id}', { params: { path: { tenant_id: svc.tenantId, destination_id: 'dst_01j9zx5w3k8f6t2q4r7m1n0bcd' } } }));
    expect(refused).toBeInstanceOf(ProblemError);
    expect(refused).toMatchObject({ status: 404, problem: { status: 404, title: 'Not found', type: expect.stringMatching(/\/errors\/not-found$/), detail: expect.any(String) } });
  });

  it('sends the key it was given, and none without one', async () => {
    const anonymous = createHooklineClient({ baseUrl: svc.url });
    const refused = await refusal(anonymous.GET('/v1/tenants/{tenant_id}/destinations', { params: { path: { tenant_id: svc.tenantId } } }));
    expect(refused).toMatchObject({ status: 401, problem: { type: expect.stringMatching(/\/errors\/unauthorized$/) } });
  });
});
