/** The sales module's face (docs/sales.md): the reads its handlers call. Its routes are routes.ts. */
export { paymentMethods, purchaseCohorts, salesFigures } from '#lib/sales/service';
