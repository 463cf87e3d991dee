/**
 * Nesting depth of a parsed JSON value (a scalar is 0, `{}` and `[]` are 1), walked without
 * recursion. The walk stops as soon as the depth passes `stopAbove`: the answer is then some
 * depth above it, which is all a bound needs to know.
 */
export function jsonDepth(value: unknown, stopAbove = Infinity): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) max = d;
    if (max > stopAbove) return max;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, d + 1]);
  }
  return max;
}
