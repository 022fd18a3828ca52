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

/** Every item of a list, following `meta.next_cursor` 100 at a time (page numbers stop at an offset of 10,000). */
export const allPages = async (api: ReturnType<typeof useApi>, token: string, path: string): Promise<{ items: any[]; total: number }> => {
  const sep = path.includes('?') ? '&' : '?';
  const items: any[] = [];
  let cursor: string | null = null;
  for (;;) {
    const r: { status: number; body: any } = await api.get(
      `${path}${sep}per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      token,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    items.push(...r.body.data);
    cursor = r.body.meta.next_cursor;
    if (!cursor) return { items, total: r.body.meta.total as number };
  }
};
