import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isMap, isScalar, parseDocument } from 'yaml';
import { openApiDocument } from '../../api/openapi';

/**
 * The OpenAPI document under Redocly's linter, with the rules of the repository's redocly.yaml
 * (the recommended set): no error and no warning, each problem listed by rule, location and
 * message. A rule is switched off only with the reason beside it. @redocly/openapi-core is an ES
 * module only, so it runs in a plain node process, given the document on its standard input.
 */

const REPO = path.join(__dirname, '../..');
const CONFIG = path.join(REPO, 'redocly.yaml');

interface Problem {
  rule: string;
  severity: string;
  pointer: string;
  message: string;
}

const LINT = `
  import { lintConfig, lintFromString, loadConfig } from '@redocly/openapi-core';
  const [configPath, documentPath] = process.argv.slice(1);
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const config = await loadConfig({ configPath });
  const found = [
    ...(await lintConfig({ config })),
    ...(await lintFromString({ source: Buffer.concat(chunks).toString('utf8'), absoluteRef: documentPath, config })),
  ];
  const where = (p) => p.location[0] ? (p.location[0].source.absoluteRef === documentPath ? '' : 'redocly.yaml ') + p.location[0].pointer : '';
  process.stdout.write(JSON.stringify(found.map((p) => ({ rule: p.ruleId, severity: p.severity, pointer: where(p), message: p.message }))));`;

/** The problems Redocly finds in `doc` (and in redocly.yaml itself), with the repository's rules. */
function lint(doc: unknown): Problem[] {
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', LINT, CONFIG, path.join(REPO, 'openapi.json')], { cwd: REPO, input: JSON.stringify(doc), maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(out.toString('utf8')) as Problem[];
}

describe('the OpenAPI document under redocly lint', () => {
  it('breaks no rule of redocly.yaml: no error, no warning', () => {
    const problems = lint(openApiDocument({ errorBase: 'https://hookline.example' }));
    expect(problems.map((p) => `${p.severity} ${p.rule} at ${p.pointer}: ${p.message}`)).toEqual([]);
  });

  it('finds the problems it is there for', () => {
    // an operation without a summary, and a $ref to nothing
    const doc = openApiDocument({ errorBase: 'https://hookline.example' }) as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const op = doc.paths['/v1/openapi.json']!.get!;
    delete op.summary;
    op.responses = { ...(op.responses as object), '418': { $ref: '#/components/responses/NoSuchResponse' } };
    const rules = lint(doc).map((p) => p.rule);
    expect(rules).toEqual(expect.arrayContaining(['operation-summary', 'no-unresolved-refs']));
  });

  it('switches a rule off only with the reason right above it', () => {
    const config = parseDocument(readFileSync(CONFIG, 'utf8'));
    const rules = config.get('rules');
    expect(isMap(rules)).toBe(true);
    if (!isMap(rules)) return;
    rules.items.forEach((pair, i) => {
      const off = isScalar(pair.value) ? pair.value.value === 'off' : isMap(pair.value) && pair.value.get('severity') === 'off';
      if (!off) return;
      // the comment above the first rule belongs to the map in yaml's reading
      const reason = (isScalar(pair.key) ? pair.key.commentBefore : undefined) ?? (i === 0 ? rules.commentBefore : undefined) ?? '';
      const rule = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      expect({ rule, explained: reason.trim().length > 40 }).toEqual({ rule, explained: true });
    });
  });
});
