import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../core/paths';

/** The one line refusing a Node older than `engines` (package.json's `>=N`), or undefined when it is new enough. */
export function unsupportedNode(version: string, engines: string): string | undefined {
  const required = Number(/^>=\s*v?(\d+)/.exec(engines)?.[1]);
  const major = Number(/^v?(\d+)/.exec(version)?.[1]);
  if (!(major < required)) return undefined;
  return `hookline needs Node ${required} or newer (engines.node "${engines}"), this is Node ${version}: npm start runs it on the Node pinned in .nvmrc, which it fetches into .cache/node`;
}

/** Stops the process on an unsupported Node. The entry point imports this module first, before anything else loads. */
export function refuseUnsupportedNode(): void {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { engines?: { node?: string } };
  const refusal = unsupportedNode(process.version, pkg.engines?.node ?? '');
  if (refusal === undefined) return;
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}

refuseUnsupportedNode();
