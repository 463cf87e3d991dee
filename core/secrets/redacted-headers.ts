/**
 * Request headers that carry a sender's credentials rather than the webhook: the Hook URL stores
 * them with this value instead of theirs, so no copy of the data (Kafka, ClickHouse) holds them.
 * Provider signatures travel in headers of their own and stay verifiable.
 */
export const REDACTED_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'cookie']);
export const REDACTED_VALUE = '[redacted]';
