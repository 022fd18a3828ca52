// One function's runtime host for `npm start -- --bundles` (infra/local/bundle-runtime.ts): run by
// the project's Node 22 with the function's environment and the layer's resolve hook, it imports
// the function's esbuild bundle once (its cold start) and answers invocations sent over the IPC
// channel, as Lambda's runtime API hands them to an instance. Plain JavaScript: Node 22 runs it as is.
import { pathToFileURL } from 'node:url';

const [bundleFile, functionName, memory] = process.argv.slice(2);
const started = performance.now();
let handler;
try {
  ({ handler } = await import(pathToFileURL(bundleFile).href));
  if (typeof handler !== 'function') throw new Error(`${bundleFile} exports no handler`);
} catch (err) {
  process.send({ type: 'init-error', error: describe(err) });
  process.exit(1);
}
process.send({ type: 'ready', node: process.version, initMs: Math.round(performance.now() - started) });

function describe(err) {
  return { name: err?.name ?? 'Error', message: err?.message ?? String(err), stack: err?.stack };
}

/** The Lambda context of one invocation: its deadline is the one the caller computed. */
const contextOf = (id, deadline) => ({
  callbackWaitsForEmptyEventLoop: false,
  functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
  memoryLimitInMB: memory,
  awsRequestId: id,
  logGroupName: `/aws/lambda/${functionName}`,
  logStreamName: 'local',
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
});

process.on('message', async ({ id, event, deadline }) => {
  try {
    const result = await handler(event, contextOf(id, deadline));
    // The answer crosses the channel as JSON, as Lambda serializes a handler's result.
    process.send({ type: 'result', id, result: result === undefined ? null : result });
  } catch (err) {
    process.send({ type: 'error', id, error: describe(err) });
  }
});
// The channel closing (the parent stopped) ends the instance.
process.on('disconnect', () => process.exit(0));
