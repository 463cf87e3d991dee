import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The dashboard's files as they are served: nothing that parses data as markup or runs strings
 * as code, no inline script or style (the Content-Security-Policy would refuse them anyway), no
 * resource from another origin, and every module import names a file that exists.
 */

const UI = path.join(__dirname, '../../ui');

function filesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesOf(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

describe('dashboard files', () => {
  const files = filesOf(UI);
  const scripts = files.filter((f) => f.endsWith('.js'));
  const text = (f: string) => readFileSync(f, 'utf8');

  it('never parse data as markup or run strings as code', () => {
    expect(scripts.length).toBeGreaterThan(5);
    for (const f of scripts) {
      const found = text(f).match(/\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new Function|setAttribute\(\s*['"]on|createContextualFragment|DOMParser/g);
      expect({ file: path.relative(UI, f), found }).toEqual({ file: path.relative(UI, f), found: null });
    }
  });

  it('load nothing from another origin and hold no inline script, style or handler', () => {
    for (const f of files.filter((x) => /\.(html|css|js|svg)$/.test(x))) {
      // comments may cite a specification; code and markup may not point anywhere
      const code = text(f).split('\n').filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line)).join('\n');
      const urls = (code.match(/https?:\/\/[^\s'")]+/g) ?? []).filter((u) => u !== 'http://www.w3.org/2000/svg');
      expect({ file: path.relative(UI, f), urls }).toEqual({ file: path.relative(UI, f), urls: [] });
    }
    for (const f of files.filter((x) => x.endsWith('.html'))) {
      const html = text(f);
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    }
  });

  it('import only modules that exist', () => {
    for (const f of scripts) {
      for (const m of text(f).matchAll(/^import [^'"]*['"]([^'"]+)['"];?$/gm)) {
        const target = path.resolve(path.dirname(f), m[1]!);
        expect({ from: path.relative(UI, f), import: m[1], exists: existsSync(target) }).toEqual({ from: path.relative(UI, f), import: m[1], exists: true });
      }
    }
    const html = text(path.join(UI, 'index.html'));
    for (const m of html.matchAll(/(?:src|href)="\/ui\/([^"]+)"/g)) expect(existsSync(path.join(UI, m[1]!))).toBe(true);
  });
});
