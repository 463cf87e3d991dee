import { RE2JSSyntaxException, RE2Set } from 're2js';

/**
 * Tenant-supplied regular expressions, on RE2 semantics (the re2js port): matching takes time
 * linear in the input, whatever the pattern, because RE2 never backtracks. Patterns RE2 cannot
 * express (backreferences, lookaround, possessive quantifiers) do not compile. No tenant string
 * ever becomes a V8 RegExp, whose backtracking can run for hours on a short pattern.
 */
export interface CompiledPattern {
  /** Whether the pattern matches anywhere in `value` (anchor with ^…$ for the whole value). */
  test(value: string): boolean;
  /** Instructions of the compiled program: the work per input character grows with it. */
  size: number;
}

/**
 * Largest program one pattern may compile to. Counted repetitions (`{1000}`) are the way a
 * short pattern grows a large program; everyday patterns stay far below (a UUID is 40).
 */
export const MAX_PROGRAM_SIZE = 200;

/**
 * Memory the lazy DFA of one pattern may build before it starts over (re2js's default is 8 MiB).
 * Beyond it matching goes on in the NFA, linear all the same but slower.
 */
const DFA_MEMORY_BYTES = 1 << 20;

/** Compiled patterns kept, least recently used dropped first: bounds memory, not correctness. */
const CACHE_SIZE = 256;
const cache = new Map<string, CompiledPattern | string>();

/** Compiles `source` once (then serves it from the cache), or says why it cannot be used. */
export function compilePattern(source: string): CompiledPattern | string {
  const hit = cache.get(source);
  if (hit !== undefined) {
    cache.delete(source);
    cache.set(source, hit);
    return hit;
  }
  const compiled = compile(source);
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(source, compiled);
  return compiled;
}

function compile(source: string): CompiledPattern | string {
  // A one-pattern set is re2js's matcher whose DFA memory can be bounded.
  const set = new RE2Set(RE2Set.UNANCHORED, 0, DFA_MEMORY_BYTES);
  try {
    set.add(source);
    set.compile();
  } catch (err) {
    return err instanceof RE2JSSyntaxException ? syntaxProblem(err) : 'cannot be compiled by the RE2 engine';
  }
  const size = set.prog.numInst();
  if (size > MAX_PROGRAM_SIZE) return `compiles to ${size} RE2 instructions, more than ${MAX_PROGRAM_SIZE}; large counted repetitions such as {100} grow it most`;
  return { size, test: (value) => set.match(value).length > 0 };
}

/** Problems that JavaScript-only syntax runs into: `\1`, `(?=`, `(?<!`, `a++`. */
const JS_ONLY = new Set(['invalid escape sequence', 'invalid or unsupported Perl syntax', 'invalid named capture', 'invalid nested repetition operator']);

function syntaxProblem(err: RE2JSSyntaxException): string {
  const description = err.getDescription();
  if (description === 'expression too large' || description === 'expression nests too deeply') return `is too large for the RE2 engine (${description})`;
  const at = err.getPattern();
  const problem = `is not a valid RE2 regular expression: ${description}${at ? ` \`${at}\`` : ''}`;
  return JS_ONLY.has(description) ? `${problem} (RE2 has no backreferences, lookaround or possessive quantifiers)` : problem;
}
