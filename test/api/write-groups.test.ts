import { startTestService, type TestService } from '../support/service';

/** Write groups switched off by configuration (spec part 5, rule 5); one embedded engine per process, so a file of its own. */
describe('disabled write groups', () => {
  let locked: TestService;
  beforeAll(async () => {
    locked = await startTestService({ DISABLED_WRITE_GROUPS: 'write:destinations' });
  });
  afterAll(async () => {
    await locked?.stop();
  });

  it('403 write-tool-disabled for a write group switched off by configuration', async () => {
    const res = await locked.api('POST', `/v1/tenants/${locked.tenantId}/destinations`, { name: 'x', url: 'http://127.0.0.1:9/x' });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: `${locked.config.errorBase}/errors/write-tool-disabled`, tool_group: 'write:destinations' });
    // reads and other write groups still work
    expect((await locked.api('GET', `/v1/tenants/${locked.tenantId}/destinations`)).status).toBe(200);
    expect((await locked.api('POST', `/v1/tenants/${locked.tenantId}/saved-payloads`, { name: 'p', payload: {} })).status).toBe(201);
  });
});
