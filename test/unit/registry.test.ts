import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONSUMER_NAMES, consumerGroups, consumers, groupIdOf, replayableTopics, stageIo, topicNames } from '../../core/topics';
import { STAGE_NAMES } from '../../core/config';
import { topology } from '../../service/topology';
import { checkWrites } from '../../pipeline/runtime/stage';

/** The consumer table is the one place that says who reads and writes which topic. */
describe('the registry of topics and consumers', () => {
  const topics = topicNames('p.');
  const { specs, records } = topology(topics, 3);
  const created = new Set(specs.map((s) => s.topic));
  const table = consumers(topics);

  it('names every consumer once, each run by a process stage, reading and writing only topics the service creates', () => {
    expect(table.map((c) => c.name)).toEqual([...CONSUMER_NAMES]);
    for (const c of table) {
      expect(STAGE_NAMES).toContain(c.stage);
      for (const t of [...c.reads, ...c.writes]) expect(created).toContain(t);
      for (const t of c.reads) expect(records[t]).toBeDefined();
    }
  });

  it('leaves no pipeline topic unread or unwritten, except the ones outside the stages', () => {
    const read = new Set(table.flatMap((c) => c.reads));
    const written = new Set(table.flatMap((c) => c.writes));
    // config and the registry's own state are read by every process, logs written by every logger;
    // the delivery dead letters wait for an operator; replays of dead letters are written by the API and the command line
    const outside = new Set([topics.config, topics.received, topics.logs, topics.deliveryDlq]);
    const writtenOutside = new Set([topics.config, topics.received, topics.logs, topics.eventsDlqReplays]);
    for (const t of created) {
      if (t === topics.schemas) continue;
      if (!outside.has(t)) expect({ topic: t, read: read.has(t) }).toEqual({ topic: t, read: true });
      if (!writtenOutside.has(t)) expect({ topic: t, written: written.has(t) }).toEqual({ topic: t, written: true });
    }
  });

  it('puts dead letters back only on the inputs of the stages', () => {
    const replayable = replayableTopics(topics);
    expect(replayable).toEqual(expect.arrayContaining([topics.received, topics.deliveryRequested, topics.deliveryHeld, topics.deliveryCompleted, ...topics.retryTiers.map((t) => t.topic)]));
    for (const t of [topics.config, topics.transitions, topics.logs, topics.evidenceLeaves, topics.eventsDlq, topics.eventsDlqReplays, topics.deliveryDlq]) expect(replayable).not.toContain(t);
  });

  it('gives record stages one input and their declared outputs, and group ids under the prefix', () => {
    expect(stageIo(topics, 'filter', 'WebhookEvent')).toEqual({ name: 'filter', input: { topic: 'p.webhooks.validated', record: 'WebhookEvent' }, writes: ['p.webhooks.filtered', 'p.events.transitions', 'p.events.dlq'] });
    expect(() => stageIo(topics, 'sink', 'WebhookEvent')).toThrow('consumer sink reads 9 topics, not one');
    expect(groupIdOf('p.hookline.', 'deliver')).toBe('p.hookline.deliver');
    // filter and route run inside validate's group: the live checks measure the groups that exist
    expect(table.filter((c) => c.within).map((c) => [c.name, c.within])).toEqual([['filter', 'validate'], ['route', 'validate']]);
    expect(consumerGroups(topics).map((c) => c.name)).toEqual(['validate', 'deliver', 'release', 'retry', 'evidence-sequencer', 'sink']);
  });

  it('refuses an output to a topic the stage does not declare', () => {
    const output = (topic: string) => ({ topic, key: 'k', record: 'LogEntry' as const, value: {} as never });
    expect(() => checkWrites({ name: 'filter', writes: [topics.filtered] }, [output(topics.filtered)])).not.toThrow();
    expect(() => checkWrites({ name: 'filter', writes: [topics.filtered] }, [output(topics.filtered), output(topics.deliveryRequested)])).toThrow('stage filter wrote to p.deliveries.requested, which it does not declare');
    expect(() => checkWrites({ name: 'free' }, [output('anything')])).not.toThrow();
  });

  it('is what docs/architecture.md describes: every consumer and every topic is named there', () => {
    const page = readFileSync(path.join(__dirname, '../../docs/architecture.md'), 'utf8');
    for (const c of table) expect({ consumer: c.name, named: page.includes(`\`${c.name}\``) || page.includes(` ${c.name} `) }).toEqual({ consumer: c.name, named: true });
    for (const t of created) {
      const name = t.slice('p.'.length).replace(/^deliveries\.retry\..*/, 'deliveries.retry.<tier>');
      expect({ topic: name, named: page.includes(name) }).toEqual({ topic: name, named: true });
    }
  });
});
