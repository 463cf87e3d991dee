import { runScript } from '../support/process';

/**
 * The TypeScript client's types are generated from the OpenAPI document the code builds; the
 * file in the tree must be what generating it now gives, so a change to the API reaches the
 * client (and the CLI that uses it) in the same commit. The generator runs in a process of its
 * own: openapi-typescript loads ES modules, which jest's CommonJS runtime cannot require.
 */
describe('the TypeScript client', () => {
  it('has the types npm run generate:client writes from the OpenAPI document', async () => {
    const r = await runScript('scripts/generate-client.ts', ['--check'], process.env);
    // one line, not a diff of a file of thousands of lines
    if (r.code !== 0) throw new Error(r.stderr.trim() || `scripts/generate-client.ts --check exited ${r.code}`);
  });
});
