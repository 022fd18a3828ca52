/** The list envelope's meta (decisions §4). */
export type PageMeta = {
  current_page: number;
  from: number | null;
  last_page: number;
  per_page: number;
  to: number | null;
  total: number;
};

export const pageMeta = (page: number, perPage: number, total: number, count: number): PageMeta => {
  const offset = (page - 1) * perPage;
  return {
    current_page: page,
    from: count > 0 ? offset + 1 : null,
    last_page: Math.max(1, Math.ceil(total / perPage)),
    per_page: perPage,
    to: count > 0 ? offset + count : null,
    total,
  };
};

export const paginated = <T>(data: T[], page: number, perPage: number, total: number) => ({
  data,
  meta: pageMeta(page, perPage, total, data.length),
});
