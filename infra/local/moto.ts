import { spawn, spawnSync } from 'node:child_process';
import { freePort } from './dynamodb.ts';

/**
 * moto_server (Python moto 5) as the EventBridge and SQS emulator of the tests and of
 * `npm start -- --bundles`: started on a free 127.0.0.1 port, stopped by its `stop`. `.ci/run` installs it.
 */
export const motoInstalled = (): boolean => spawnSync('moto_server', ['--help'], { stdio: 'ignore' }).status === 0;

export const startMoto = async () => {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4_000)));
  const stop = () =>
    new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
      child.once('exit', () => {
        clearTimeout(force);
        done();
      });
      child.kill('SIGTERM');
    });
  for (const until = Date.now() + 30_000; ; ) {
    if (child.exitCode !== null) throw new Error(`moto_server exited: ${stderr}`);
    try {
      if ((await fetch(`${endpoint}/moto-api/`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`moto_server did not answer on ${endpoint}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { endpoint, stop };
};
