import { readFileSync } from 'node:fs';
import type { EventType, EventTypeCreate } from '../clients/typescript/src';
import { dataOf, tenantApi } from './api-client';
import { CliError } from './connect';

type Values = Record<string, string | string[] | boolean | undefined>;

/**
 * `event-types list|create|get|delete`: the tenant's event type catalogue through the API, each
 * answer printed as one JSON line.
 */
export async function eventTypesCommand(args: string[], values: Values): Promise<unknown> {
  const [sub, ...rest] = args;
  const what = `event-types ${sub ?? ''}`.trim();
  const oneId = () => {
    if (rest.length !== 1 || !rest[0]) throw new CliError(`${what} takes one event type id`);
    return rest[0];
  };
  switch (sub) {
    case 'list': {
      if (rest.length > 0) throw new CliError('event-types list takes no arguments');
      const { client, tenant_id } = tenantApi(values, what);
      // every page, so the listing is the whole catalogue
      const all: EventType[] = [];
      let cursor: string | undefined;
      do {
        const page = await dataOf(client.GET('/v1/tenants/{tenant_id}/event-types', { params: { path: { tenant_id }, query: { limit: 200, cursor } } }));
        all.push(...page.event_types);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return { event_types: all };
    }
    case 'create': {
      if (rest.length > 0) throw new CliError('event-types create takes no arguments besides its flags');
      if (typeof values.name !== 'string' || values.name === '') throw new CliError('event-types create needs --name <name>');
      const body: EventTypeCreate = { name: values.name };
      if (typeof values.description === 'string') body.description = values.description;
      if (typeof values.schema === 'string') body.schema = schemaFile(values.schema);
      const { client, tenant_id } = tenantApi(values, what);
      return dataOf(client.POST('/v1/tenants/{tenant_id}/event-types', { params: { path: { tenant_id } }, body }));
    }
    case 'get': {
      const id = oneId();
      const { client, tenant_id } = tenantApi(values, what);
      return dataOf(client.GET('/v1/tenants/{tenant_id}/event-types/{event_type_id}', { params: { path: { tenant_id, event_type_id: id } } }));
    }
    case 'delete': {
      const id = oneId();
      const { client, tenant_id } = tenantApi(values, what);
      await dataOf(client.DELETE('/v1/tenants/{tenant_id}/event-types/{event_type_id}', { params: { path: { tenant_id, event_type_id: id } } }));
      return { deleted: true, id };
    }
    default:
      throw new CliError(sub ? `unknown command "event-types ${sub}"` : 'event-types needs list, create, get or delete');
  }
}

/** The JSON Schema in `file`; the API judges whether it is a usable schema. */
function schemaFile(file: string): EventTypeCreate['schema'] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`--schema ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    return JSON.parse(text) as EventTypeCreate['schema'];
  } catch (err) {
    throw new CliError(`--schema ${file}: not JSON (${(err as Error).message})`);
  }
}
