import type { Destination, Tenant } from '../../core/model';
import { isSuspended } from '../../core/tenants';
import type { Topics } from '../../core/topics';
import type { DeliveryTask } from '../../platform/avro/records';
import type { Output } from '../runtime/stage';

/**
 * A delivery of a paused or disabled destination, set aside on the held topic instead of
 * attempted, under its delivery's key (`key`): an ordered destination's by the destination, so in
 * the order held, any other's by event, spread like its tasks. No attempt, no outcome, and no
 * slot of the rate limit kept (it would be stale when the task comes back).
 */
export function holdTask(topics: Topics, task: DeliveryTask, key: string): Output<'DeliveryTask'> {
  return { topic: topics.deliveryHeld, key, record: 'DeliveryTask', value: { ...task, slot_at: null } };
}

/** True when the destination's deliveries are held rather than attempted: it is paused or disabled, or its tenant is suspended. */
export function isHeld(destination: Destination, tenant: Tenant | undefined): boolean {
  return destination.status === 'paused' || destination.status === 'disabled' || isSuspended(tenant);
}
