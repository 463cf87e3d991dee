import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { apiTarget, problemLine } from './api-client';
import { CliError } from './connect';

export const EXPORT_USAGE = `  npm run cli -- export deliveries|events|logs --format ndjson|csv|parquet --out <file> [--max-rows n] [--limit n]
                 [--status s] [--destination id] [--event-type t] [--from t] [--to t] [--http-status 500|5xx] [--text q] [--level l]
                 [--tenant <id>] [--api-url <url>]
                 (every page of GET /v1/tenants/{tenant}/exports/<kind>, following the cursor to the end or --max-rows, into one
                  file; Parquet: one file per page, <file> with -0001, -0002, ... before its extension; key in HOOKLINE_API_KEY)`;

const KINDS = ['deliveries', 'events', 'logs'];
const FORMATS = ['ndjson', 'csv', 'parquet'];
/** The options of `export` and the query parameter each one sets. */
const FILTERS: Record<string, string> = { status: 'status', destination: 'destination_id', 'event-type': 'event_type', from: 'from', to: 'to', 'http-status': 'response_code', text: 'q', level: 'level' };
/** How long one page may take to arrive, its rows included. */
const PAGE_TIMEOUT_MS = 10 * 60_000;

/**
 * `export <kind>`: pages of the export, each request the previous page's next cursor, written as
 * they arrive. A page that does not arrive whole (the server closed the connection early) ends
 * the command with an error and leaves no file that looks complete (`<file>.part` stays).
 */
export async function exportCommand(argv: string[]): Promise<unknown> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      format: { type: 'string' }, out: { type: 'string' }, 'max-rows': { type: 'string' }, limit: { type: 'string' },
      tenant: { type: 'string' }, 'api-url': { type: 'string' },
      ...Object.fromEntries(Object.keys(FILTERS).map((o) => [o, { type: 'string' as const }])),
    },
  });
  const [kind, ...extra] = positionals;
  const format = values.format;
  const out = values.out;
  if (!kind || !KINDS.includes(kind) || extra.length > 0 || typeof format !== 'string' || !FORMATS.includes(format) || typeof out !== 'string' || out === '') throw new CliError(`usage:\n${EXPORT_USAGE}`);
  const maxRows = countOption(values['max-rows'], '--max-rows');
  const pageRows = countOption(values.limit, '--limit');
  const target = apiTarget(values, 'export');
  const query = new URLSearchParams({ format });
  for (const [option, param] of Object.entries(FILTERS)) {
    const v = (values as Record<string, unknown>)[option];
    if (typeof v === 'string' && v !== '') query.set(param, v);
  }

  const files: string[] = [];
  let single: ReturnType<typeof createWriteStream> | undefined;
  let cursor: string | null = null;
  let pages = 0;
  let sent = 0;
  let bytes = 0;
  try {
    do {
      if (maxRows !== undefined) query.set('limit', String(Math.min(maxRows - sent, pageRows ?? Number.MAX_SAFE_INTEGER, 100_000)));
      else if (pageRows !== undefined) query.set('limit', String(pageRows));
      if (cursor) query.set('cursor', cursor);
      const res = await request(`${target.apiUrl}/v1/tenants/${encodeURIComponent(target.tenant)}/exports/${kind}?${query}`, target.apiKey);
      pages++;
      let sink = single;
      if (format === 'parquet') {
        const file = pageFile(out, pages);
        files.push(file);
        sink = createWriteStream(`${file}.part`);
      } else if (!sink) {
        files.push(out);
        sink = single = createWriteStream(`${out}.part`);
      }
      // CSV: each page starts with the header line; the file keeps the first one
      let skipHeader = format === 'csv' && pages > 1;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        let part = Buffer.from(chunk);
        if (skipHeader) {
          const eol = part.indexOf(0x0a);
          if (eol < 0) continue;
          part = part.subarray(eol + 1);
          skipHeader = false;
        }
        bytes += part.length;
        if (!sink.write(part)) await once(sink, 'drain');
      }
      if (format === 'parquet') await closeFile(sink, files[files.length - 1]!);
      cursor = res.headers.get('hookline-next-cursor');
      // a page with a next cursor holds the `limit` rows asked for
      sent += Number(query.get('limit') ?? 0);
    } while (cursor && (maxRows === undefined || sent < maxRows));
    if (single) await closeFile(single, out);
  } catch (err) {
    single?.destroy();
    throw err instanceof CliError ? err : new CliError(`the export was cut short on page ${pages}: ${(err as Error).message}; nothing after the last complete page is kept (.part)`);
  }
  return { kind, format, pages, bytes, files, complete: cursor === null };
}

async function request(url: string, apiKey: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(PAGE_TIMEOUT_MS) });
  } catch (err) {
    const { cause } = err as Error & { cause?: Error };
    throw new CliError(`cannot reach the API: ${cause ? cause.message : (err as Error).message}`);
  }
  if (res.status !== 200) {
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    throw new CliError(problemLine(res.status, body));
  }
  return res;
}

/** `out.parquet` -> `out-0001.parquet` (the extension, when there is one, stays last). */
export function pageFile(out: string, page: number): string {
  const n = String(page).padStart(4, '0');
  const m = /^(.*?)(\.[^./\\]+)?$/.exec(out)!;
  return `${m[1]}-${n}${m[2] ?? ''}`;
}

/** Ends a written file and moves it to its name: only a whole file gets it. */
async function closeFile(stream: ReturnType<typeof createWriteStream>, file: string): Promise<void> {
  stream.end();
  await once(stream, 'finish');
  rmSync(file, { force: true });
  renameSync(`${file}.part`, file);
}

function countOption(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^[1-9]\d{0,8}$/.test(v)) throw new CliError(`${name} must be a positive integer`);
  return Number(v);
}
