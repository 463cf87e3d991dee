/**
 * The header naming the configuration version (an offset of the config topic, in decimal) a
 * record was decided with. A process that reads the record applies at least that version before
 * deciding on it, so a change made in one process reaches every later step in order. Declared
 * here, below every layer that writes records: the stage runtime, the Hook URL and the replays.
 */
export const CONFIG_VERSION_HEADER = 'hookline-config-version';
