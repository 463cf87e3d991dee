/**
 * An `INSERT INTO t [(columns)] FORMAT X` whose rows are the request body, as
 * @clickhouse/client's insert() sends it. The engine takes such rows as raw bytes through
 * Session.insert, which parses them natively and reports the rows written; any other INSERT
 * runs as a statement (and reports none).
 */
export interface InlineInsert {
  table: string;
  columns: string[] | undefined;
  format: string;
}

// the text formats Session.insert accepts for raw bytes
const RAW_FORMATS = new Set(['JSONEachRow', 'JSONCompactEachRow', 'TSV', 'TabSeparated', 'TSVWithNames', 'TabSeparatedWithNames', 'CSV', 'CSVWithNames']);
const NAME = '[A-Za-z_][A-Za-z0-9_]*';
const STATEMENT = new RegExp(`^\\s*INSERT\\s+INTO\\s+(?:TABLE\\s+)?(${NAME}(?:\\.${NAME})?)\\s*(?:\\(([^)]*)\\))?\\s*FORMAT\\s+(\\w+)\\s*$`, 'i');
const COLUMN = new RegExp(`^${NAME}$`);

export function parseInlineInsert(query: string, database: string | undefined): InlineInsert | undefined {
  const m = STATEMENT.exec(query);
  if (!m || !RAW_FORMATS.has(m[3]!)) return undefined;
  const columns = m[2]?.split(',').map((c) => c.trim());
  if (columns && !columns.every((c) => COLUMN.test(c))) return undefined;
  const table = m[1]!.includes('.') || database === undefined ? m[1]! : `${database}.${m[1]}`;
  return { table, columns, format: m[3]! };
}
