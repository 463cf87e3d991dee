import { Counter } from 'prom-client';
import { bodySealings } from '../../core/secrets/body-seal';
import { registry } from './metrics';

/** What the counter below has been given of bodySealings.seconds. */
let sealingSecondsCounted = 0;
new Counter({
  name: 'hookline_body_sealing_seconds_total',
  help: 'Seconds this process spent sealing webhook bodies for Kafka and opening them (XChaCha20-Poly1305 or AES-GCM, and finding bodies it sealed or opened lately), on the clock around that synchronous work.',
  registers: [registry],
  collect() {
    const now = bodySealings.seconds;
    this.inc(now - sealingSecondsCounted);
    sealingSecondsCounted = now;
  },
});

const unopenable = new Counter({
  name: 'hookline_sealed_bodies_unopenable_total',
  help: 'Records a stage dropped because their sealed body does not open: its data key is gone (the tenant erased) or the bytes were altered.',
  registers: [registry],
});

/** Counts one record dropped with a body that does not open. */
export function recordUnopenableBody(): void {
  unopenable.inc();
}
