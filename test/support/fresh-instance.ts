import { afterEach } from 'vitest';
import { throttleBucket } from '#lib/db/retry';

/**
 * Every test starts as a fresh function instance would: with a full throttle bucket. The bucket is
 * shared by an instance's invocations (lib/db/retry.ts), and a test that throttles every call
 * empties it on purpose; the next test must not inherit that.
 */
afterEach(() => throttleBucket.refill());
