/** A DateTime64(3) as ClickHouse prints it; cursors carry it and must not carry anything else. */
export const CH_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/;

/** `2026-01-02 03:04:05.678` (ClickHouse, UTC) -> `2026-01-02T03:04:05.678Z`. */
export function isoFromClickHouse(value: string): string {
  return `${value.replace(' ', 'T')}Z`;
}
