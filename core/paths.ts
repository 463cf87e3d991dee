import path from 'node:path';

/**
 * Where the compiled tree is, relative to the repository: the build (scripts/build.cjs) writes
 * each module to the same path under it, `service/main.ts` as `dist/service/main.js`.
 */
export const BUILD_DIR = 'dist';

/** True when this process runs the compiled tree rather than the TypeScript sources (tsx, jest). */
export const RUNS_COMPILED = path.extname(__filename) === '.js';

/**
 * The repository's root, from the sources and from the compiled tree alike. Files other than
 * code (schemas, migrations, the dashboard, package.json) are not copied into the compiled tree:
 * they are read from the sources' folders, which the production image keeps.
 */
export const REPO_ROOT = path.resolve(__dirname, RUNS_COMPILED ? '../..' : '..');

/** The source folder of a module's `__dirname`: the same folder, or for a compiled module its counterpart outside the compiled tree. */
export function sourceDir(dirname: string): string {
  const inBuild = path.relative(path.join(REPO_ROOT, BUILD_DIR), dirname);
  return inBuild.startsWith('..') || path.isAbsolute(inBuild) ? dirname : path.join(REPO_ROOT, inBuild);
}

/**
 * How to run another entry point of the repository (`infra/clickhouse/server-main.ts`) as a node
 * process, the way this one runs: its compiled file, or its source through tsx's require hook.
 * One node process either way (no tsx wrapper), so signals reach the entry point itself.
 */
export function entryPointArgs(script: string): string[] {
  if (RUNS_COMPILED) return [path.join(REPO_ROOT, BUILD_DIR, script.replace(/\.ts$/, '.js'))];
  return ['--require', require.resolve('tsx/cjs'), path.join(REPO_ROOT, script)];
}
