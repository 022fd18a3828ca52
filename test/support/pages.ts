import { expect } from 'vitest';
import type { useApi } from './api.ts';

/**
 * The cursor of a list at `offset` items from its start (a multiple of 100), reached by following
 * `meta.next_cursor` 100 items at a time: what a client reading deep into the list holds.
 */
export const cursorAt = async (api: ReturnType<typeof useApi>, token: string, path: string, offset: number): Promise<string> => {
  const sep = path.includes('?') ? '&' : '?';
  let cursor: string | undefined;
  for (let read = 0; read < offset; read += 100) {
    const r = await api.get(`${path}${sep}per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, token);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    cursor = r.body.meta.next_cursor;
    expect(cursor, `no next_cursor after ${read + 100} items of ${path}`).toEqual(expect.any(String));
  }
  return cursor!;
};
