// The tenant's catalogue of event types (GET /v1/tenants/{tenant}/event-types): the names
// destinations subscribe to, each with a description, the JSON Schema of its payload and an
// example payload.

/** Every event type, by name order of creation; the error instead when they cannot be read. */
export function eventTypeCatalog(api) {
  return api.all('/event-types', 'event_types').catch((err) => err);
}

/** The example payload of an event type: the API's, else the schema's first example, else an empty object. */
export function exampleOf(type) {
  if (type?.example !== undefined && type.example !== null) return type.example;
  const examples = type?.schema?.examples;
  return Array.isArray(examples) && examples.length > 0 ? examples[0] : {};
}
