import { rmSync } from 'node:fs';

/** Stops what global-setup started; nothing is left running after a test run. */
export default async function globalTeardown(): Promise<void> {
  const infra = globalThis.__hooklineTestInfra;
  if (!infra) return;
  await infra.registry?.close();
  await Promise.all([infra.kafka?.stop(), infra.redis?.stop()]);
  rmSync(infra.dir, { recursive: true, force: true });
}
