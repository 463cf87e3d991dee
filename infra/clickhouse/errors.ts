/**
 * A ClickHouse exception as the HTTP interface reports it: `Code: N. DB::Exception: <message> (TYPE)`.
 * @clickhouse/client parses exactly that text into its ClickHouseError (code, type, message),
 * so every failure this server answers goes through here.
 */
export class ClickHouseException extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'ClickHouseException';
  }

  /** The response body; a real server names its version the same way. */
  text(version: string): string {
    return `Code: ${this.code}. DB::Exception: ${this.message} (${this.type}) (version ${version})\n`;
  }
}

const EXCEPTION_TEXT = /^Code: (\d+)\. DB::Exception: (.*) \(([A-Z0-9_]+)\)\s*$/s;

/**
 * The engine already speaks ClickHouse's exception text; anything else (a failure of the
 * binding itself) becomes STD_EXCEPTION, as the server reports a C++ exception it did not expect.
 */
export function asClickHouseException(err: unknown): ClickHouseException {
  if (err instanceof ClickHouseException) return err;
  const text = err instanceof Error ? err.message : String(err);
  const m = EXCEPTION_TEXT.exec(text);
  if (m) return new ClickHouseException(Number(m[1]), m[3]!, m[2]!);
  return new ClickHouseException(1001, 'STD_EXCEPTION', `${text}.`);
}

// The server's own table (exceptionCodeToHTTPStatus), keyed by the exception's type name.
const STATUS_BY_TYPE: Record<string, number> = {
  REQUIRED_PASSWORD: 401,
  ...Object.fromEntries(['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE'].map((t) => [t, 403])),
  ...Object.fromEntries(
    [
      'BAD_ARGUMENTS', 'CANNOT_COMPILE_REGEXP', 'CANNOT_PARSE_TEXT', 'CANNOT_PARSE_ESCAPE_SEQUENCE', 'CANNOT_PARSE_QUOTED_STRING',
      'CANNOT_PARSE_DATE', 'CANNOT_PARSE_DATETIME', 'CANNOT_PARSE_NUMBER', 'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING', 'CANNOT_PARSE_IPV4',
      'CANNOT_PARSE_IPV6', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'CANNOT_PARSE_UUID', 'DUPLICATE_COLUMN', 'ILLEGAL_COLUMN',
      'UNKNOWN_ELEMENT_IN_AST', 'UNKNOWN_TYPE_OF_AST_NODE', 'THERE_IS_NO_COLUMN', 'TOO_DEEP_AST', 'TOO_BIG_AST',
      'UNEXPECTED_AST_STRUCTURE', 'SYNTAX_ERROR', 'INCORRECT_DATA', 'TYPE_MISMATCH', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
    ].map((t) => [t, 400]),
  ),
  ...Object.fromEntries(
    [
      'UNKNOWN_TABLE', 'UNKNOWN_FUNCTION', 'UNKNOWN_IDENTIFIER', 'UNKNOWN_TYPE', 'UNKNOWN_STORAGE', 'UNKNOWN_DATABASE',
      'UNKNOWN_SETTING', 'UNKNOWN_DIRECTION_OF_SORTING', 'UNKNOWN_AGGREGATE_FUNCTION', 'UNKNOWN_FORMAT',
      'UNKNOWN_DATABASE_ENGINE', 'UNKNOWN_TYPE_OF_QUERY', 'UNKNOWN_ROLE',
    ].map((t) => [t, 404]),
  ),
  QUERY_IS_TOO_LARGE: 413,
  NOT_IMPLEMENTED: 501,
  SOCKET_TIMEOUT: 503,
  CANNOT_OPEN_FILE: 503,
  CANNOT_SCHEDULE_TASK: 503,
  HTTP_LENGTH_REQUIRED: 411,
  TIMEOUT_EXCEEDED: 408,
};

export function httpStatusOf(e: ClickHouseException): number {
  return STATUS_BY_TYPE[e.type] ?? 500;
}

export const authenticationFailed = (user: string) =>
  new ClickHouseException(516, 'AUTHENTICATION_FAILED', `${user}: Authentication failed: password is incorrect, or there is no user with such name.`);
export const badArguments = (message: string) => new ClickHouseException(36, 'BAD_ARGUMENTS', message);
export const notImplemented = (message: string) => new ClickHouseException(48, 'NOT_IMPLEMENTED', message);
export const emptyQuery = () => new ClickHouseException(62, 'SYNTAX_ERROR', 'Empty query.');
