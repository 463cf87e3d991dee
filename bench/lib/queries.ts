/**
 * The SQL GET /v1/tenants/{t}/deliveries?status=...&limit=... runs (first page, no cursor,
 * no resource-scoped key), copied from api/routes/deliveries.ts so that the baseline reads
 * exactly what the API reads. It asks for limit + 1 rows, as the route does for its cursor.
 */
export function listDeliveriesSql(database: string, tenant: string, status: string, limitPlusOne: number) {
  return {
    query: `SELECT delivery_id, attempt_number, event_id, destination_id, status, response_code, toString(attempted_at) AS attempted_at_text, error_message, body_sha256
              FROM ${database}.deliveries FINAL
              WHERE tenant_id = {tenant:String} AND status = {status:String}
              ORDER BY attempted_at DESC, delivery_id DESC, attempt_number DESC
              LIMIT {limit:UInt32}`,
    query_params: { tenant, status, limit: limitPlusOne },
  };
}
