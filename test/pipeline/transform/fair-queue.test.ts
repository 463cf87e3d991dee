import { FairQueue } from '../../../pipeline/deliver/transform/fair-queue';

const takeAll = (q: FairQueue<string>) => {
  const out: string[] = [];
  for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
  return out;
};

describe('FairQueue', () => {
  it('alternates keys with backlogs, each key in its own order', () => {
    const q = new FairQueue<string>(100);
    for (const x of ['a1', 'a2', 'a3', 'a4']) q.push('a', x);
    for (const x of ['b1', 'b2']) q.push('b', x);
    q.push('c', 'c1');
    expect(q.size).toBe(7);
    expect(q.keys).toBe(3);
    expect(takeAll(q)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(q.size).toBe(0);
  });

  it('serves a key that starts waiting before the key just served, whose backlog came first', () => {
    const q = new FairQueue<string>(100);
    q.push('a', 'a1');
    expect(q.shift()).toBe('a1');
    // a's next items arrive while a1 runs, b's after them
    for (const x of ['a2', 'a3']) q.push('a', x);
    for (const x of ['b1', 'b2']) q.push('b', x);
    expect(takeAll(q)).toEqual(['b1', 'a2', 'b2', 'a3']);
  });

  it('refuses an item beyond the limit of its key only', () => {
    const q = new FairQueue<string>(2);
    expect(q.push('a', 'a1')).toBe(true);
    expect(q.push('a', 'a2')).toBe(true);
    expect(q.push('a', 'a3')).toBe(false);
    expect(q.push('b', 'b1')).toBe(true);
    expect(q.shift()).toBe('a1');
    expect(q.push('a', 'a3')).toBe(true);
    expect(q.drain()).toEqual(['a2', 'a3', 'b1']);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it('forgets the turns of keys long idle without losing anything waiting', () => {
    const q = new FairQueue<string>(10);
    for (let i = 0; i < 5000; i++) {
      q.push(`k${i}`, `x${i}`);
      expect(q.shift()).toBe(`x${i}`);
    }
    q.push('busy', 'b1');
    q.push('busy', 'b2');
    q.push('new', 'n1');
    expect(takeAll(q)).toEqual(['b1', 'n1', 'b2']);
  });
});
