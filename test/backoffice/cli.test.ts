import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdminGetUserCommand,
  AdminListGroupsForUserCommand,
  CognitoIdentityProviderClient,
  CreateGroupCommand,
  CreateUserPoolCommand,
} from '@aws-sdk/client-cognito-identity-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '../support/api.ts';
import { ok, ops, runCli } from '../support/cli.ts';
import { isolatedClock } from '../pipeline/support.ts';
import { motoInstalled, startMoto } from '../outbox/support/moto.ts';
import { backoffice } from './support.ts';

/** `npm run ops -- backoffice-token` and `backoffice-user create`, run as child processes. */
process.env.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE = '100000';
isolatedClock();
const api = useApi();

const merchant = async () => (await ok('merchant', 'create', '--name', 'Back office CLI')).merchant_id as string;

// Several CLI processes per test, one after another (~1–2 s each, more on a loaded machine).
describe('ops backoffice-token (local stack)', { timeout: 90_000 }, () => {
  it('issues a JWT the local server accepts, with the role asked for', async () => {
    const id = await merchant();
    const admin = await ok('backoffice-token', '--merchant', id, '--role', 'admin', '--email', 'owner@example.com');
    expect(admin).toEqual({
      token: expect.stringMatching(/^ey[\w-]+\.[\w-]+\.[\w-]+$/),
      expires_at: expect.any(String),
      merchant_id: id,
      role: 'admin',
    });
    const lifetime = Date.parse(admin.expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(3500_000);
    expect(lifetime).toBeLessThanOrEqual(3600_000);
    const created = await backoffice(api, 'create', admin.token);
    expect(created.status).toBe(201);

    const user = await ok('backoffice-token', '--merchant', id, '--role', 'user', '--ttl', '15m');
    expect(Date.parse(user.expires_at) - Date.now()).toBeLessThanOrEqual(900_000);
    expect((await backoffice(api, 'view', user.token)).body.data.last_four).toBe(created.body.data.last_four);
    expect((await backoffice(api, 'revoke', user.token)).status).toBe(403);
  });

  it('a token past its --ttl is refused by the local authorizer', async () => {
    const id = await merchant();
    const short = await ok('backoffice-token', '--merchant', id, '--role', 'admin', '--ttl', '1s');
    // Expired from its exp on (whole seconds, the instant expires_at names), by the wall clock.
    while (Date.now() < Date.parse(short.expires_at)) await new Promise((r) => setTimeout(r, 50));
    const res = await backoffice(api, 'view', short.token);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('the token has expired');
  });

  it('explains mistakes: usage errors exit 2, an unknown merchant exits 1, AWS is not its business', async () => {
    const usage: [string[], string][] = [
      [['--merchant', 'mer_x'], '--role is required'],
      [['--merchant', 'mer_x', '--role', 'owner'], '--role must be one of admin, user'],
      [['--merchant', 'mer_x', '--role', 'admin', '--ttl', 'soon'], '--ttl must be 1s to 1d'],
      [['--merchant', 'mer_x', '--role', 'admin', '--ttl', '2d'], '--ttl must be 1s to 1d'],
      [['--merchant', 'M#x', '--role', 'admin'], '--merchant is not a merchant id'],
    ];
    const [unknown, ...runs] = await Promise.all([
      ops('backoffice-token', '--merchant', 'mer_doesnotexist', '--role', 'admin'),
      ...usage.map(([args]) => ops('backoffice-token', ...args)),
    ]);
    // Usage errors: exit 2, nothing on stdout, the reason and the usage on stderr.
    runs.forEach((r, i) =>
      expect(
        { code: r.code, stdout: r.stdout, usage: r.stderr.includes('usage:'), reason: r.stderr.includes(usage[i][1]) },
        r.stderr,
      ).toEqual({
        code: 2,
        stdout: '',
        usage: true,
        reason: true,
      }),
    );
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: 'Merchant mer_doesnotexist does not exist.', status: 404 });

    // No local stack (no endpoint, no stack file): it does not pretend to issue Cognito tokens.
    const { DYNAMODB_ENDPOINT: _e, ...rest } = process.env;
    const dir = mkdtempSync(join(tmpdir(), 'ops-bo-'));
    const away = await runCli(['backoffice-token', '--merchant', 'mer_x', '--role', 'admin'], {
      ...rest,
      HOME: dir,
      LOCAL_STACK_FILE: join(dir, 'none.json'),
    });
    expect(away.code).toBe(1);
    expect(away.stderr).toContain('backoffice-token issues tokens for the local stack only');
  });
});

describe('ops backoffice-user create', { timeout: 90_000 }, () => {
  it('locally: creates nothing and says how to issue a token instead', async () => {
    const id = await merchant();
    const r = await ops('backoffice-user', 'create', '--merchant', id, '--email', 'ana@example.com', '--role', 'user');
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toEqual({
      created: false,
      local: true,
      merchant_id: id,
      email: 'ana@example.com',
      role: 'user',
      issue_token: `npm run -s ops -- backoffice-token --merchant ${id} --role user --email ana@example.com`,
    });
    expect(r.stderr).toContain('the local stack has no user pool');
    const bad = await ops('backoffice-user', 'create', '--merchant', id, '--email', 'not-an-email', '--role', 'user');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--email must be an e-mail address');
  });

  describe.skipIf(!motoInstalled())('in a Cognito user pool (moto_server)', () => {
    let moto: Awaited<ReturnType<typeof startMoto>>;
    let cognito: CognitoIdentityProviderClient;
    let poolId: string;
    const awsEnv = () => ({
      ...process.env,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER: moto.endpoint,
    });
    beforeAll(async () => {
      moto = await startMoto();
      cognito = new CognitoIdentityProviderClient({
        endpoint: moto.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      });
      const pool = await cognito.send(
        new CreateUserPoolCommand({
          PoolName: 'backoffice-test',
          UsernameAttributes: ['email'],
          Schema: [{ Name: 'merchant_id', AttributeDataType: 'String', Mutable: false }],
        }),
      );
      poolId = pool.UserPool!.Id!;
      for (const group of ['admin', 'user']) await cognito.send(new CreateGroupCommand({ UserPoolId: poolId, GroupName: group }));
    }, 60_000);
    afterAll(async () => moto?.stop());

    it('creates the user with the merchant attribute and the role group; a second create is 409', async () => {
      const id = await merchant();
      const args = [
        'backoffice-user',
        'create',
        '--merchant',
        id,
        '--email',
        'boss@example.com',
        '--role',
        'admin',
        '--user-pool-id',
        poolId,
      ];
      const r = await runCli(args, awsEnv());
      expect(r.code, r.stderr).toBe(0);
      expect(r.json).toMatchObject({ created: true, user_pool_id: poolId, email: 'boss@example.com', merchant_id: id, role: 'admin' });

      const user = await cognito.send(new AdminGetUserCommand({ UserPoolId: poolId, Username: r.json.username }));
      const attributes = Object.fromEntries(user.UserAttributes!.map((a) => [a.Name, a.Value]));
      expect(attributes).toMatchObject({ email: 'boss@example.com', email_verified: 'true', 'custom:merchant_id': id });
      const groups = await cognito.send(new AdminListGroupsForUserCommand({ UserPoolId: poolId, Username: r.json.username }));
      expect(groups.Groups!.map((g) => g.GroupName)).toEqual(['admin']);

      const again = await runCli(args, awsEnv());
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stderr)).toEqual({ error: `A back-office user boss@example.com already exists in ${poolId}.`, status: 409 });
      // The pool id may come from the environment too; an unknown merchant is refused before Cognito.
      const unknown = await runCli(
        ['backoffice-user', 'create', '--merchant', 'mer_nobody', '--email', 'x@example.com', '--role', 'user'],
        {
          ...awsEnv(),
          BACKOFFICE_USER_POOL_ID: poolId,
        },
      );
      expect(unknown.code).toBe(1);
      expect(JSON.parse(unknown.stderr)).toEqual({ error: 'Merchant mer_nobody does not exist.', status: 404 });
    });
  });
});
