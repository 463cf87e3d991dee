import { createKafka } from '../../platform/kafka/client';

// kafkajs as patched by patches/kafkajs+2.2.4.patch (its request queue)
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RequestQueue = require('kafkajs/src/network/requestQueue') as { prototype: { checkPendingRequests(): void } };

/**
 * kafkajs 2.2.4 checked every connection's queue of pending requests again 1 ms after each check,
 * whether a request waited or not: a timer for ever per broker connection once it had answered
 * one request, a dozen connections in a service process. Patched, a connection that waits for
 * nothing sets no timer.
 */
describe('kafkajs connections (patched)', () => {
  it('check for pending requests only while one waits, not on a timer of their own when idle', async () => {
    const kafka = createKafka(process.env.KAFKA_BROKERS!.split(','), 'idle-test', { quiet: true });
    const admin = kafka.admin();
    await admin.connect();
    const checks = jest.spyOn(RequestQueue.prototype, 'checkPendingRequests');
    try {
      // requests answered, and several in flight at once on one connection
      await Promise.all([admin.listTopics(), admin.listTopics(), admin.describeCluster()]);
      checks.mockClear();
      await new Promise((r) => setTimeout(r, 300));
      expect(checks).not.toHaveBeenCalled();
      // and the connection still answers what comes next
      expect((await admin.describeCluster()).brokers.length).toBeGreaterThan(0);
    } finally {
      checks.mockRestore();
      await admin.disconnect();
    }
  });
});
