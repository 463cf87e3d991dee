import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** The README is the front page: what the service is, the quick start and where to go next. */
const README_MAX_LINES = 320;

/**
 * GitHub's slug of a heading's text: lowercase, every character that is not a letter, a digit, a
 * space, a hyphen or an underscore removed, every space a hyphen (github-slugger).
 */
function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}_ -]/gu, '')
    .replace(/ /g, '-');
}

/** The text of a heading as GitHub renders it: links and images give their text, tags nothing. */
function headingText(raw: string): string {
  return raw
    .replace(/\s+#+\s*$/, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim();
}

/** The lines of a Markdown file, with the lines of fenced code blocks (``` or ~~~) emptied. */
function outsideFences(markdown: string): string[] {
  let fence: { char: string; length: number } | null = null;
  return markdown.split('\n').map((line) => {
    const run = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (run !== undefined && run[0] === fence.char && run.length >= fence.length && line.trim() === run) fence = null;
      return '';
    }
    if (run !== undefined && !(run[0] === '`' && line.slice(line.indexOf(run) + run.length).includes('`'))) {
      fence = { char: run.charAt(0), length: run.length };
      return '';
    }
    return line;
  });
}

/**
 * Every anchor a Markdown file has: the slugs of its ATX headings, a repeated slug numbered -1, -2, ...
 * in order as GitHub numbers them, and the names and ids of its HTML anchors.
 */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of outsideFences(markdown)) {
    const h = /^ {0,3}#{1,6}(?:[ \t]+(.*))?$/.exec(line);
    if (h) {
      const base = slug(headingText(h[1] ?? ''));
      let s = base;
      while (seen.has(s)) {
        const n = (seen.get(base) ?? 0) + 1;
        seen.set(base, n);
        s = `${base}-${n}`;
      }
      seen.set(s, 0);
      out.add(s);
    }
    for (const a of line.matchAll(/<a\s[^>]*\b(?:name|id)=["']([^"']+)["']/gi)) out.add(a[1] ?? '');
  }
  return out;
}

/** The text with code spans and backslash escapes blanked (newlines kept), so that only real links are left. */
function maskCode(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < text.length) {
    if (text[i] === '\\' && i + 1 < text.length && text[i + 1] !== '\n') {
      blank(i, i + 2);
      i += 2;
      continue;
    }
    if (text[i] !== '`') {
      i++;
      continue;
    }
    let n = 0;
    while (text[i + n] === '`') n++;
    // the closing run has exactly n backticks and comes before a blank line
    let j = i + n;
    let end = -1;
    while (j < text.length) {
      if (text[j] === '\n' && /^\n[ \t]*(\n|$)/.test(text.slice(j, j + 80))) break;
      if (text[j] === '`') {
        let m = 0;
        while (text[j + m] === '`') m++;
        if (m === n) {
          end = j + m;
          break;
        }
        j += m;
        continue;
      }
      j++;
    }
    if (end === -1) {
      i += n;
      continue;
    }
    blank(i, end);
    i = end;
  }
  return out.join('');
}

interface Link {
  line: number;
  target: string;
}

/** Every inline link, image and link reference definition of a Markdown file, outside code. */
function links(markdown: string): Link[] {
  const text = maskCode(outsideFences(markdown).join('\n'));
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const found: Link[] = [];
  const inline = /!?\[(?:[^[\]]|\[[^[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g;
  for (const m of text.matchAll(inline)) found.push({ line: lineOf(m.index ?? 0), target: (m[1] ?? '').replace(/^<|>$/g, '') });
  for (const m of text.matchAll(/^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)/gm)) found.push({ line: lineOf(m.index ?? 0), target: (m[1] ?? '').replace(/^<|>$/g, '') });
  return found;
}

/** A target with a scheme (https:, mailto:, ...) or starting with // leaves the repository. */
const external = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

/**
 * What is wrong with the relative links of these files (paths from the repository's root, text by
 * path): a target file that does not exist, or an anchor that no heading of the target file has.
 */
function brokenLinks(files: Map<string, string>, exists: (repoPath: string) => boolean, read: (repoPath: string) => string): string[] {
  const problems: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  for (const [file, markdown] of files) {
    for (const { line, target } of links(markdown)) {
      if (external(target) || target === '') continue;
      const hash = target.indexOf('#');
      const rawPath = (hash === -1 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const targetPath = rawPath === '' ? file : rawPath.startsWith('/') ? path.posix.normalize(rawPath.slice(1)) : path.posix.join(path.posix.dirname(file), decodeURIComponent(rawPath));
      const where = `${file}:${line}: ${target}`;
      if (targetPath.startsWith('..')) {
        problems.push(`${where}: leads out of the repository`);
        continue;
      }
      if (!exists(targetPath)) {
        problems.push(`${where}: ${targetPath} does not exist`);
        continue;
      }
      if (anchor === null) continue;
      if (!targetPath.endsWith('.md')) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) problems.push(`${where}: ${targetPath} is not Markdown, so #${anchor} names no heading`);
        continue;
      }
      if (!anchorsOf.has(targetPath)) anchorsOf.set(targetPath, anchors(files.get(targetPath) ?? read(targetPath)));
      if (!anchorsOf.get(targetPath)?.has(anchor)) problems.push(`${where}: ${targetPath} has no heading #${anchor}`);
    }
  }
  return problems;
}

function manual(): Map<string, string> {
  const files = new Map<string, string>([['README.md', readFileSync(path.join(ROOT, 'README.md'), 'utf8')]]);
  for (const name of readdirSync(path.join(ROOT, 'docs')).filter((n) => n.endsWith('.md')).sort()) {
    files.set(`docs/${name}`, readFileSync(path.join(ROOT, 'docs', name), 'utf8'));
  }
  return files;
}

describe('links of the README and docs/*.md', () => {
  it('slugs headings as GitHub does', () => {
    const cases: [string, string][] = [
      ['Quick start', 'quick-start'],
      ['Fault tests: `npm run test:faults`', 'fault-tests-npm-run-testfaults'],
      ['Scaling out: one process, N processes, a cluster', 'scaling-out-one-process-n-processes-a-cluster'],
      ['What is encrypted, with which key', 'what-is-encrypted-with-which-key'],
      ['`event_type`', 'event_type'],
      ['Patterns (RE2)', 'patterns-re2'],
      ['Node 24 and the compiled service', 'node-24-and-the-compiled-service'],
      ['A -- b', 'a----b'],
      ['Légende des états', 'légende-des-états'],
    ];
    for (const [text, expected] of cases) expect({ text, slug: slug(text) }).toEqual({ text, slug: expected });
    expect([...anchors('# A\n\n## A\n\n```\n# not a heading\n```\n\n### A\n\n## [Linked](x.md) heading ##\n\n<a name="here"></a>\n')]).toEqual(['a', 'a-1', 'a-2', 'linked-heading', 'here']);
  });

  it('finds links and images outside code, and reports a missing file or heading', () => {
    const page = [
      '# Page',
      '',
      'See [a](./b.md#two), [gone](./missing.md), ![img](./pic.png), [self](#page), [no](#nowhere),',
      '[web](https://example.com/x.md), [mail](mailto:a@b.c), `[code](./nope.md)` and [`code` text](b.md).',
      '',
      '```md',
      '[fenced](./nope.md)',
      '```',
      '',
      '[ref]: ./other.md#one',
    ].join('\n');
    expect(links(page).map((l) => l.target)).toEqual(['./b.md#two', './missing.md', './pic.png', '#page', '#nowhere', 'https://example.com/x.md', 'mailto:a@b.c', 'b.md', './other.md#one']);
    const files = new Map([
      ['docs/a.md', page],
      ['docs/b.md', '# One\n\n## Two\n'],
    ]);
    const onDisk = new Set(['docs/a.md', 'docs/b.md', 'docs/pic.png', 'docs/other.md']);
    const problems = brokenLinks(files, (p) => onDisk.has(p), () => '# Two\n');
    expect(problems).toEqual([
      'docs/a.md:3: ./missing.md: docs/missing.md does not exist',
      'docs/a.md:3: #nowhere: docs/a.md has no heading #nowhere',
      'docs/a.md:10: ./other.md#one: docs/other.md has no heading #one',
    ]);
  });

  it('leads every relative link and image to a file that exists, and every anchor to a heading', () => {
    const files = manual();
    expect(files.size).toBeGreaterThan(10);
    const problems = brokenLinks(
      files,
      (p) => existsSync(path.join(ROOT, p)),
      (p) => readFileSync(path.join(ROOT, p), 'utf8'),
    );
    expect(problems).toEqual([]);
  });

  it(`keeps the README a front page of at most ${README_MAX_LINES} lines`, () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const lines = readme.endsWith('\n') ? readme.split('\n').length - 1 : readme.split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });
});
