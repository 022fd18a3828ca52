import { expect } from 'vitest';
import { InvalidError } from '#lib/errors';

/** The fields a pure rule refuses with (its InvalidError, a 422 once on the wire); fails when it does not refuse. */
export const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidError);
    return (err as InvalidError).fields;
  }
  throw new Error('expected a refusal');
};
