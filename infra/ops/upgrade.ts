import { foldLegacyCounters } from '#lib/db/counters';
import { moveCustomerListKeys, moveCustomerSearchKeys } from '#lib/customers/store';
import { moveOrderListKeys } from '#lib/orders/store';
import { merchantIdPages } from '#lib/merchants/store';
import { backfillEndpointList } from '#lib/webhooks/store';
import { now } from '#lib/clock';
import { plusMonths, utcMonth } from '#lib/shared/time';
import { addToMerchantDirectory, backfillMerchantDirectory } from './directory.ts';
import { upgradeFiguresSettings } from './figures-upgrade.ts';

/**
 * `ops upgrade`: brings a table written by an earlier version to the current layout, one merchant
 * or all of them (docs/deployment-and-protection.md, "Upgrading"). Every step is idempotent, so a run that stops
 * can simply be run again; a merchant already upgraded costs a few reads.
 */
type Step = { name: string; run: (merchantId: string) => Promise<unknown> };

/** The months whose stats reads use: this one and the next (a write dated a little ahead lands there). */
const statsMonths = (): string[] => {
  const month = utcMonth(now().toISOString());
  return [month, plusMonths(month, 1)];
};

export const UPGRADE_STEPS: Step[] = [
  { name: 'merchant directory', run: async (merchantId) => ({ added: (await addToMerchantDirectory(merchantId)) ? 1 : 0 }) },
  { name: 'webhook endpoint list', run: backfillEndpointList },
  { name: 'grouped counters', run: (merchantId) => foldLegacyCounters(merchantId, statsMonths()) },
  {
    name: 'list entries',
    run: async (merchantId) => ({
      orders: (await moveOrderListKeys(merchantId)).moved,
      customers: (await moveCustomerListKeys(merchantId)).moved,
    }),
  },
  { name: 'customer search shards', run: moveCustomerSearchKeys },
  { name: 'figures settings', run: upgradeFiguresSettings },
];

export const upgradeMerchant = async (merchantId: string): Promise<Record<string, unknown>> => {
  const out: Record<string, unknown> = {};
  for (const step of UPGRADE_STEPS) out[step.name] = await step.run(merchantId);
  return out;
};

/** Every merchant: those missing from the directory are added first (a Scan), then each is upgraded. */
export const upgradeAllMerchants = async (): Promise<{ merchants: number }> => {
  await backfillMerchantDirectory();
  let merchants = 0;
  for await (const ids of merchantIdPages()) {
    for (const id of ids) {
      await upgradeMerchant(id);
      merchants++;
    }
  }
  return { merchants };
};
