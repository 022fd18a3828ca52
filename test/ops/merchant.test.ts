import { settleRecounts } from '#lib/metrics/recount';
import { hashToken } from '#lib/auth/tokens';
import { describe, expect, it } from 'vitest';
import { ensureTable } from '../../infra/local/dynamodb.ts';
import { useApi } from '../support/api.ts';
import { isolatedClock } from '../pipeline/support.ts';
import { ok, ops, runCli, type Run } from '../support/cli.ts';

/** `ops merchant list|show|update` and `ops token show`, run as operators run them: child processes. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const merchant = async (name = 'Show shop') => (await ok('merchant', 'create', '--name', name)).merchant_id as string;

const MISSING = 'mer_00000000000000000000';

/** A usage error: exit 2, nothing on stdout, the reason and the command's help on stderr. */
const expectUsage = (r: Run, reason: string) => {
  expect({ code: r.code, stdout: r.stdout, reason: r.stderr.includes(reason), usage: r.stderr.includes('usage: ops ') }, r.stderr).toEqual({
    code: 2,
    stdout: '',
    reason: true,
    usage: true,
  });
};

const expectMissing = (r: Run, merchantId = MISSING) => {
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  expect(JSON.parse(r.stderr)).toEqual({ error: `Merchant ${merchantId} does not exist.`, status: 404 });
};

// Each test runs several CLI processes (~1–2 s each, more on a loaded machine).
describe('ops merchant list', { timeout: 90_000 }, () => {
  it('lists the merchant directory, deleted merchants marked, in id order; --limit stops it and says so', async () => {
    // A table of its own: the list reads the whole directory.
    const table = `merchant-list-${Date.now()}`;
    await ensureTable(process.env.DYNAMODB_ENDPOINT, table);
    const env = { ...process.env, TABLE_NAME: table };
    const cli = async (...args: string[]) => {
      const r = await runCli(args, env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.json;
    };
    const created = await Promise.all([
      cli('merchant', 'create', '--name', 'One'),
      cli('merchant', 'create', '--name', 'Two', '--currency', 'usd'),
      cli('merchant', 'create', '--name', 'Three'),
    ]);
    const deleted = await cli('merchant', 'delete', '--merchant', created[1].merchant_id);

    const all = await cli('merchant', 'list');
    const expected = created
      .map((m) => ({ ...m, delinquency_days: 30, deleted: m === created[1], deleted_at: m === created[1] ? deleted.deleted_at : null }))
      .sort((a, b) => a.merchant_id.localeCompare(b.merchant_id));
    expect(all).toEqual({ data: expected, meta: { count: 3, more: false } });
    expect(expected.find((m) => m.name === 'Two')).toMatchObject({ reporting_currency: 'USD', deleted: true });

    const [two, three, bad, zero] = await Promise.all([
      runCli(['merchant', 'list', '--limit', '2'], env),
      runCli(['merchant', 'list', '--limit', '3'], env),
      runCli(['merchant', 'list', '--limit', 'many'], env),
      runCli(['merchant', 'list', '--limit', '0'], env),
    ]);
    expect(two.json).toEqual({ data: expected.slice(0, 2), meta: { count: 2, more: true } });
    expect(three.json).toEqual(all);
    expectUsage(bad, '--limit must be a whole number, got many');
    expectUsage(zero, '--limit must be at least 1, got 0');
  });
});

describe('ops merchant show and token show', { timeout: 90_000 }, () => {
  it("show the merchant and its token's status, abilities and use, never the token or its hash", async () => {
    const id = await merchant();
    const before = await ok('merchant', 'show', '--merchant', id);
    expect(before).toEqual({
      merchant_id: id,
      name: 'Show shop',
      reporting_currency: expect.stringMatching(/^[A-Z]{3}$/),
      timezone: 'UTC',
      delinquency_days: 30,
      created_at: expect.any(String),
      deleted: false,
      deleted_at: null,
      token: { status: 'none' },
    });
    expect(await ok('token', 'show', '--merchant', id)).toEqual({ merchant_id: id, status: 'none' });

    const issued = await ok('token', 'create', '--merchant', id, '--abilities', 'customers:read,orders:read');
    const unused = await ok('token', 'show', '--merchant', id);
    expect(unused).toEqual({
      merchant_id: id,
      status: 'active',
      abilities: ['customers:read', 'orders:read'],
      prefix: issued.token.slice(0, 8),
      last_four: issued.token.slice(-4),
      created_at: issued.created_at,
      last_used_at: null,
    });

    expect((await api.get('/customers', issued.token)).status).toBe(200);
    const [used, shown] = await Promise.all([ops('token', 'show', '--merchant', id), ops('merchant', 'show', '--merchant', id)]);
    expect(used.json).toMatchObject({ status: 'active', last_used_at: expect.stringMatching(/Z$/) });
    expect(shown.json.token).toEqual({ ...used.json, merchant_id: undefined });
    for (const r of [used, shown]) {
      expect(r.stdout).not.toContain(issued.token);
      expect(r.stdout).not.toContain(hashToken(issued.token));
    }

    const { revoked_at } = await ok('token', 'revoke', '--merchant', id);
    expect(await ok('token', 'show', '--merchant', id)).toMatchObject({
      status: 'revoked',
      revoked_at,
      abilities: ['customers:read', 'orders:read'],
    });
  });

  it('show a deleted merchant, marked (its data is kept), and the token revoked with it', async () => {
    const other = await merchant('Deleted shop');
    await ok('token', 'create', '--merchant', other);
    const { deleted_at } = await ok('merchant', 'delete', '--merchant', other);
    expect(await ok('merchant', 'show', '--merchant', other)).toMatchObject({
      deleted: true,
      deleted_at,
      token: { status: 'revoked', revoked_at: deleted_at },
    });
  });

  it('a missing merchant is a 404; bad options are usage errors', async () => {
    const [merchantMissing, tokenMissing, noMerchant, notAnId, unknownOption, tokenNoMerchant] = await Promise.all([
      ops('merchant', 'show', '--merchant', MISSING),
      ops('token', 'show', '--merchant', MISSING),
      ops('merchant', 'show'),
      ops('merchant', 'show', '--merchant', 'M#x'),
      ops('merchant', 'show', '--merchant', MISSING, '--name', 'x'),
      ops('token', 'show', '--merchant'),
    ]);
    expectMissing(merchantMissing);
    expectMissing(tokenMissing);
    expectUsage(noMerchant, '--merchant is required');
    expectUsage(notAnId, '--merchant is not a merchant id: M#x');
    expectUsage(unknownOption, "unknown option '--name'");
    expect(unknownOption.stderr).toContain('--merchant <id>'); // the options it takes
    expectUsage(tokenNoMerchant, "option '--merchant <id>' argument missing");
  });
});

describe('ops merchant update', { timeout: 90_000 }, () => {
  it('renames a merchant; refuses the reporting currency, nothing to change, a deleted or missing merchant', async () => {
    const id = await merchant('Old name');
    const renamed = await ok('merchant', 'update', '--merchant', id, '--name', 'New name');
    expect(renamed).toEqual({
      merchant_id: id,
      name: 'New name',
      reporting_currency: expect.any(String),
      timezone: 'UTC',
      delinquency_days: 30,
      created_at: expect.any(String),
    });
    // The delinquency days: 1–90, shown by the merchant, its settings and its token's requests.
    expect(await ok('merchant', 'update', '--merchant', id, '--delinquency-days', '45')).toMatchObject({ delinquency_days: 45 });
    expect(await ok('merchant', 'show', '--merchant', id)).toMatchObject({ delinquency_days: 45 });
    for (const bad of ['0', '91', 'x', '7.5'])
      expectUsage(
        await ops('merchant', 'update', '--merchant', id, '--delinquency-days', bad),
        `--delinquency-days must be a whole number of days from 1 to 90, got ${bad}`,
      );
    expect(await ok('merchant', 'show', '--merchant', id)).toMatchObject({
      name: 'New name',
      reporting_currency: renamed.reporting_currency,
    });

    const gone = await merchant('Gone');
    await ok('merchant', 'delete', '--merchant', gone);
    const [currency, nothing, empty, missing, deleted, noMerchant] = await Promise.all([
      ops('merchant', 'update', '--merchant', id, '--currency', 'EUR'),
      ops('merchant', 'update', '--merchant', id),
      ops('merchant', 'update', '--merchant', id, '--name', ''),
      ops('merchant', 'update', '--merchant', MISSING, '--name', 'x'),
      ops('merchant', 'update', '--merchant', gone, '--name', 'x'),
      ops('merchant', 'update', '--name', 'x'),
    ]);
    expectUsage(currency, '--currency cannot be changed');
    expectUsage(nothing, 'nothing to update: give --name, --timezone or --delinquency-days');
    expectUsage(empty, '--name is required');
    expectUsage(noMerchant, '--merchant is required');
    expectMissing(missing);
    expectMissing(deleted, gone);
    expect(await ok('merchant', 'show', '--merchant', id)).toMatchObject({ name: 'New name' });
  });
});

describe('ops merchant update --timezone', { timeout: 90_000 }, () => {
  it('sets the reporting time zone in its canonical spelling; the valid token answers in it from the next request', async () => {
    const id = await merchant('Zoned');
    const issued = await ok('token', 'create', '--merchant', id, '--abilities', 'analytics:read');
    expect((await api.get('/settings', issued.token)).body.data).toMatchObject({ timezone: 'UTC', reporting_currency: expect.any(String) });
    const [offset, unknown] = await Promise.all([
      ops('merchant', 'update', '--merchant', id, '--timezone', '+08:00'),
      ops('merchant', 'update', '--merchant', id, '--timezone', 'Mars/Olympus_Mons'),
    ]);
    expectUsage(offset, '--timezone must be an IANA time zone name, such as UTC, Asia/Taipei or America/New_York, got +08:00');
    expectUsage(unknown, 'got Mars/Olympus_Mons');

    const zoned = await ok('merchant', 'update', '--merchant', id, '--timezone', 'asia/taipei');
    // Stored at once; the figures follow once its recount (the worker's, here run in this process) switches.
    expect(zoned).toMatchObject({ merchant_id: id, name: 'Zoned', timezone: 'Asia/Taipei', recount: { status: 'pending' } });
    await settleRecounts(id);
    expect(await ok('merchant', 'show', '--merchant', id)).toMatchObject({ timezone: 'Asia/Taipei', token: { status: 'active' } });
    expect((await api.get('/settings', issued.token)).body.data.timezone).toBe('Asia/Taipei');
    // A token issued after the change carries it too.
    const regenerated = await ok('token', 'regenerate', '--merchant', id);
    expect((await api.get('/settings', regenerated.token)).body.data.timezone).toBe('Asia/Taipei');
  });
});

describe('ops --help', { timeout: 90_000 }, () => {
  it('lists the commands, a resource its actions, an action its options; unknown ones name what there is', async () => {
    const [top, resource, action, unknownAction, unknownResource, none] = await Promise.all([
      ops('--help'),
      ops('merchant', '--help'),
      ops('token', 'create', '--help'),
      ops('token', 'rotate'),
      ops('merchants', 'list'),
      ops(),
    ]);
    for (const r of [top, resource, action]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^usage: ops /);
    }
    for (const name of [
      'merchant',
      'token',
      'metrics',
      'backoffice-token',
      'backoffice-user',
      'activity',
      'events',
      'webhooks',
      'upgrade',
      'import',
    ]) {
      expect(top.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    }
    for (const name of ['create', 'list', 'show', 'update', 'delete', 'directory'])
      expect(resource.stdout).toMatch(new RegExp(`^  ${name} \\[options\\]`, 'm'));
    expect(action.stdout).toContain('--merchant <id>');
    expect(action.stdout).toMatch(/--abilities <list>\s+comma-separated, of: customers:read,/);
    expect(action.stdout.replace(/\s+/g, ' ')).toContain('(default: all of them)');

    expectUsage(unknownAction, 'unknown command: token rotate (token actions: create, show, regenerate, revoke)');
    expectUsage(unknownResource, 'unknown command: merchants (commands: merchant, metrics, token,');
    expectUsage(none, 'missing command: ops <resource>');
  });
});
