import type { Destination } from '../../core/model';
import type { Topics } from '../../core/topics';
import type { DeliveryTask } from '../../platform/avro/records';
import type { Output } from '../runtime/stage';

/**
 * A delivery of a paused or disabled destination, set aside on the held topic (keyed by its
 * destination, so in the order held per destination) instead of attempted: no attempt, no
 * outcome, and no slot of the rate limit kept (it would be stale when the task comes back).
 */
export function holdTask(topics: Topics, task: DeliveryTask): Output<'DeliveryTask'> {
  return { topic: topics.deliveryHeld, key: task.destination_id, record: 'DeliveryTask', value: { ...task, slot_at: null } };
}

/** True when the destination's deliveries are held rather than attempted. */
export function isHeld(destination: Destination): boolean {
  return destination.status === 'paused' || destination.status === 'disabled';
}
