import { mkdirSync } from 'node:fs';
import { Session, type RawInsertFormat } from 'chdb';
import { badArguments } from './errors';
import type { InlineInsert } from './inline-insert';

/** What the engine needs of one query: its text and the state it runs in. */
export interface EngineQuery {
  statement: string;
  database: string | undefined;
  settings: ReadonlyMap<string, string>;
  params: ReadonlyMap<string, string>;
  /** Output format when the statement has no FORMAT clause. */
  format: string;
}

export interface EngineResult {
  bytes: Buffer;
  rowsRead: number;
  bytesRead: number;
  elapsedNs: number;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The embedded engine (chdb) on one data directory, run as chdb's own @clickhouse/client
 * connection runs it: a statement through Session.queryAsync, with settings applied by SET.
 *
 * Each query gets a connection of its own, opened and closed around it, because SET, USE and
 * parameters stay on a connection: a fresh one gives each HTTP query the clean state it has on
 * a real server. The anchor session keeps the engine (and its data directory) open between
 * queries. Queries run one at a time: parameter state is not isolated between connections of
 * the bundled engine under concurrency.
 */
export class Engine {
  private readonly anchor: Session;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    this.anchor = new Session(dataDir);
  }

  run(query: EngineQuery): Promise<EngineResult> {
    return this.enqueue(() => this.execute(query));
  }

  /** Rows in `format` into the table, parsed by the engine from the bytes as they came. */
  insert(target: InlineInsert, rows: Buffer, settings: ReadonlyMap<string, string>): Promise<EngineResult> {
    return this.enqueue(() => this.executeInsert(target, rows, settings));
  }

  /** Waits for the queued queries, then releases the data directory. */
  async close(): Promise<void> {
    await this.tail;
    this.anchor.close();
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private async executeInsert(target: InlineInsert, rows: Buffer, settings: ReadonlyMap<string, string>): Promise<EngineResult> {
    const session = new Session(this.dataDir);
    try {
      const r = await session.insert({
        table: target.table,
        values: rows,
        format: target.format as RawInsertFormat,
        ...(target.columns ? { columns: target.columns } : {}),
        settings: Object.fromEntries([...settings].map(([k, v]) => [checkedName(k, 'setting'), NUMBER.test(v) ? Number(v) : v])),
      });
      return { bytes: Buffer.alloc(0), rowsRead: r.rowsWritten, bytesRead: r.bytesWritten, elapsedNs: Math.round(r.elapsed * 1e9) };
    } finally {
      session.close();
    }
  }

  private async execute(query: EngineQuery): Promise<EngineResult> {
    const sql = [...preamble(query), query.statement].join(';\n');
    const session = new Session(this.dataDir);
    try {
      const r = await session.queryAsync(sql, { format: query.format });
      const bytes = r.bytes();
      return {
        bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        rowsRead: r.rowsRead,
        bytesRead: r.bytesRead,
        elapsedNs: Math.round(r.elapsed * 1e9),
      };
    } finally {
      session.close();
    }
  }
}

/** USE and SET statements that give the connection this query's database, settings and parameters. */
function preamble(query: EngineQuery): string[] {
  const out: string[] = [];
  if (query.database !== undefined) out.push(`USE ${quoteIdentifier(query.database)}`);
  for (const [name, value] of query.settings) out.push(`SET ${checkedName(name, 'setting')} = ${settingLiteral(value)}`);
  // SET param_x takes the value in the interface's text form, exactly as a URL param_x does
  for (const [name, value] of query.params) out.push(`SET param_${checkedName(name, 'query parameter')} = ${stringLiteral(value)}`);
  return out;
}

function checkedName(name: string, what: string): string {
  if (!IDENTIFIER.test(name)) throw badArguments(`Invalid ${what} name ${JSON.stringify(name)}.`);
  return name;
}

// numbers stay numbers, so a numeric setting never depends on string conversion
const NUMBER = /^-?\d+(\.\d+)?$/;

function settingLiteral(value: string): string {
  return NUMBER.test(value) ? value : stringLiteral(value);
}

function stringLiteral(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function quoteIdentifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}
