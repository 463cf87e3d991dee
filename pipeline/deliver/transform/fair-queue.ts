/**
 * Items waiting per key (a tenant), taken by turns across keys: the next item is the oldest of
 * the key served least recently, so keys with backlogs alternate, and a key that starts waiting
 * goes before any key that has just been served. A key with a long backlog thus delays another
 * key's next item by at most one item of its own per consumer. Each key holds at most
 * `maxPerKey` items; pushing beyond it is refused, so one key's backlog cannot grow without
 * bound either. Taking an item looks at every key with items waiting: few, next to the work
 * each item stands for.
 */
export class FairQueue<T> {
  /** Keys with items waiting, oldest backlog first (a Map keeps insertion order: it breaks ties). */
  private readonly waiting = new Map<string, T[]>();
  /** When each key was last served, counted in items taken; a key not here counts as never. */
  private readonly served = new Map<string, number>();
  private taken = 0;
  private count = 0;

  constructor(private readonly maxPerKey: number) {}

  /** Whether the item was queued; false when `key` already has `maxPerKey` waiting. */
  push(key: string, item: T): boolean {
    const items = this.waiting.get(key);
    if (items === undefined) {
      this.waiting.set(key, [item]);
    } else {
      if (items.length >= this.maxPerKey) return false;
      items.push(item);
    }
    this.count++;
    return true;
  }

  /** The oldest item of the key served least recently. */
  shift(): T | undefined {
    let key: string | undefined;
    let items: T[] | undefined;
    let last = Infinity;
    for (const [k, v] of this.waiting) {
      const servedAt = this.served.get(k) ?? 0;
      if (servedAt < last) [key, items, last] = [k, v, servedAt];
    }
    if (key === undefined || items === undefined) return undefined;
    const item = items.shift() as T;
    if (items.length === 0) this.waiting.delete(key);
    this.count--;
    this.served.set(key, ++this.taken);
    // keys long idle need no memory of their turn: forgetting one makes it "never served", once
    if (this.served.size > 4 * this.waiting.size + 1024) for (const k of this.served.keys()) if (!this.waiting.has(k)) this.served.delete(k);
    return item;
  }

  /** Items waiting, all keys together. */
  get size(): number {
    return this.count;
  }

  /** Keys with at least one item waiting. */
  get keys(): number {
    return this.waiting.size;
  }

  /** Every item waiting, oldest backlog first; the queue is empty after. */
  drain(): T[] {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.count = 0;
    return all;
  }
}
