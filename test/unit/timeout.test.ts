import net, { type AddressInfo } from 'node:net';
import { withTimeout } from '../../core/timeout';

/** Two ends of a loopback TCP connection, both connected. */
async function socketPair(): Promise<{ near: net.Socket; far: net.Socket; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const near = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise<void>((resolve) => near.once('connect', resolve));
  const far = await accepted;
  return {
    near,
    far,
    close() {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}

const stall = (ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* this process's event loop, busy */
  }
};

describe('withTimeout', () => {
  it('takes an answer that came in time but was read late, past the deadline, because the event loop was busy', async () => {
    const { near, far, close } = await socketPair();
    try {
      const answer = withTimeout(new Promise<string>((resolve) => near.once('data', (d) => resolve(d.toString()))), 50, 'no answer');
      // the answer is in the socket's buffer at once; the loop gets to read it only after the deadline
      far.write('pong');
      stall(150);
      await expect(answer).resolves.toBe('pong');
    } finally {
      close();
    }
  });

  it('rejects when nothing answers, and says what and how long', async () => {
    await expect(withTimeout(new Promise(() => undefined), 30, 'redis did not answer')).rejects.toThrow('redis did not answer within 30 ms');
  });
});
