import { Counter } from 'prom-client';
import { registry } from './metrics';

const unopenable = new Counter({
  name: 'hookline_sealed_bodies_unopenable_total',
  help: 'Records a stage dropped because their sealed body does not open: its data key is gone (the tenant erased) or the bytes were altered.',
  registers: [registry],
});

/** Counts one record dropped with a body that does not open. */
export function recordUnopenableBody(): void {
  unopenable.inc();
}
