/** The body as JSON, or undefined when it is not JSON (event types are optional; verification does not depend on them). */
export function parseJson(body: Buffer | string): unknown {
  try {
    return JSON.parse(body.toString()) as unknown;
  } catch {
    return undefined;
  }
}

/** The value at a dotted path such as `data.kind` (array items by index, `items.0.type`); undefined when any step is missing. */
export function fieldAt(value: unknown, path: string): unknown {
  let at: unknown = value;
  for (const step of path.split('.')) {
    // own properties only: a path like `constructor` must not reach into the prototype
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, step)) return undefined;
    at = (at as Record<string, unknown>)[step];
  }
  return at;
}

/** A non-empty string at the path, else null. */
export function stringAt(value: unknown, path: string): string | null {
  const v = fieldAt(value, path);
  return typeof v === 'string' && v !== '' ? v : null;
}
