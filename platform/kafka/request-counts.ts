import type { Kafka } from 'kafkajs';
import { recordKafkaRequest, type KafkaClientKind } from '../metrics/metrics';

interface Instrumented {
  events: { REQUEST: string };
  on(event: string, listener: (e: { payload: { apiName: string } }) => void): unknown;
}

/**
 * Counts every request each producer, consumer and admin of `kafka` gets answered
 * (`hookline_kafka_requests_total`): the broker's cost follows its request count more than its
 * record count, so requests per delivered event is a figure of its own. kafkajs builds the event
 * for every answered request whether or not anyone listens; counting it is one addition.
 */
export function countRequests(kafka: Kafka): Kafka {
  const watch = <C extends Instrumented>(client: C, kind: KafkaClientKind): C => {
    client.on(client.events.REQUEST, (e) => recordKafkaRequest(kind, e.payload.apiName));
    return client;
  };
  const producer = kafka.producer.bind(kafka);
  const consumer = kafka.consumer.bind(kafka);
  const admin = kafka.admin.bind(kafka);
  kafka.producer = (config) => watch(producer(config), 'producer');
  kafka.consumer = (config) => watch(consumer(config), 'consumer');
  kafka.admin = (config) => watch(admin(config), 'admin');
  return kafka;
}
