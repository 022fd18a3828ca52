import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Session } from 'node:inspector/promises';
import { createLocalServer } from '../../infra/local/server.ts';

/**
 * The local server in a process of its own (forked by the bench, which starts DynamoDB Local and
 * sets the environment), so that load generation does not share its CPU and its profile is its
 * own. IPC: sends `{ port }` once listening; `{ profile: 'start' }` starts the V8 CPU profiler,
 * `{ profile: 'stop', file }` writes the profile to `file` and answers `{ profiled: file }`.
 */
const server = await createLocalServer();
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const session = new Session();
session.connect();
process.on('message', async (msg: { profile?: 'start' | 'stop'; file?: string; exit?: boolean }) => {
  if (msg.profile === 'start') {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
    process.send!({ profiling: true });
  }
  if (msg.profile === 'stop') {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(msg.file!, JSON.stringify(profile));
    process.send!({ profiled: msg.file });
  }
  if (msg.exit) server.close(() => process.exit(0));
});
process.send!({ port: (server.address() as AddressInfo).port });
