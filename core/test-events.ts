/**
 * Test events: sent by a tenant's user to one destination (POST …/destinations/{id}/test-events).
 * They enter `webhooks.received` under this reserved ingester id, so that the sink stores them as
 * every event is (their body, type and states), while their one delivery is queued by the API: no
 * flow names this ingester id, so routing adds none. Generated ingester ids are `ing_` + a ULID,
 * and a Hook URL only ever stamps the id of an ingester it found, so no webhook arrives under it.
 */
export const TEST_EVENT_INGESTER_ID = 'test-event';

/** Whether an event record is a test event's (one compare: it is on the hot path). */
export function isTestEvent(record: { ingester_id: string }): boolean {
  return record.ingester_id === TEST_EVENT_INGESTER_ID;
}
