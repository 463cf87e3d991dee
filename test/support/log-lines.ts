import { Logger } from '../../core/log';

// Logs `count` lines through the default stdout writer, then ends as `how` says:
// exit (process.exit at once), throw (an uncaught exception) or end (the event loop runs dry).
const [how, count] = [process.argv[2] ?? 'end', Number(process.argv[3] ?? 3)];
const log = new Logger('info');
for (let i = 0; i < count; i++) log.info('line', { i });
if (how === 'exit') process.exit(3);
if (how === 'throw') throw new Error('ended by an uncaught exception');
