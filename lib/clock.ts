/** The one source of "now" (UTC). Tests replace it with `setClock`. */
let current: () => Date = () => new Date();

export const now = (): Date => current();
export const setClock = (fn: () => Date): void => {
  current = fn;
};
export const resetClock = (): void => {
  current = () => new Date();
};
/** A settable fixed clock for tests. */
export const fixedClock = (iso: string) => {
  let t = new Date(iso).getTime();
  setClock(() => new Date(t));
  return {
    set: (next: string) => void (t = new Date(next).getTime()),
    advance: (ms: number) => void (t += ms),
  };
};
