import { describe, expect, it } from 'vitest';
import { openCursor, sealCursor } from '#lib/shared/cursor';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('cursor sealing', () => {
  it('opens what it sealed, for its merchant only', () => {
    const cursor = sealCursor('m1', '["x",1]');
    expect(openCursor('m1', cursor)).toBe('["x",1]');
    expect(openCursor('m2', cursor)).toBeNull();
  });

  // Node's base64url decoder drops a dangling character and the unused low bits of the last one:
  // whatever the cursor's length, no other text may open it.
  it.each([0, 1, 2, 3, 4, 5])('refuses any text but its own (plaintext of %i extra bytes)', (extra) => {
    const plain = `["x",1${'0'.repeat(extra)}]`;
    const cursor = sealCursor('m1', plain);
    expect(openCursor('m1', cursor)).toBe(plain);
    for (const c of ALPHABET) expect(openCursor('m1', `${cursor}${c}`), `${cursor} + ${c}`).toBeNull();
    const last = cursor.at(-1)!;
    for (const c of ALPHABET) if (c !== last) expect(openCursor('m1', `${cursor.slice(0, -1)}${c}`), `last ${last} → ${c}`).toBeNull();
  });
});
