import { chTime } from '../../pipeline/sink/rows';

/** The sink's DateTime64(3) text, kept per second, is what the ISO form of the same instant says. */
describe('ClickHouse time text', () => {
  const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

  it('matches the ISO form for runs within one second, across seconds, and at random instants', () => {
    const base = Date.UTC(2026, 10, 23, 14, 5, 9, 0);
    const instants = [
      0, 1, 9, 10, 99, 100, 999, 1_000, 86_399_999,
      ...Array.from({ length: 3_000 }, (_, i) => base + i * 7),
      ...Array.from({ length: 3_000 }, () => Math.floor(Math.random() * 4e12)),
    ];
    for (const ms of instants) expect(chTime(ms)).toBe(iso(ms));
  });
});
