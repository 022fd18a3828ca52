import type { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH, authKindOf } from '#lib/http/route';
import { routeList } from '#lib/api/routes';
import { tableAccessFor, type ApiStackProps } from '../../infra/stack.ts';
import { fixtureProjectRoot, synthStack } from './support/stack.ts';

/** The back office's identity in the template: Cognito pool, groups, client, JWT authorizer on its routes only. */
let fixture: ReturnType<typeof fixtureProjectRoot>;
let prod: Template;
let dev: Template;
const synth = (props: ApiStackProps) => synthStack(fixture.root, props).template;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  prod = synth({});
  dev = synth({ stage: 'dev', retainTable: false });
});
afterAll(() => fixture.remove());

const only = (template: Template, type: string) => {
  const found = Object.entries(template.findResources(type));
  expect(found, type).toHaveLength(1);
  const [id, resource] = found[0];
  return { id, resource: resource as { Properties: Record<string, any>; DeletionPolicy?: string } };
};

describe('back-office identity (CDK)', () => {
  it('one user pool: no self sign-up, email sign-in, immutable custom:merchant_id, strong passwords, MFA required', () => {
    const { resource } = only(prod, 'AWS::Cognito::UserPool');
    expect(resource.Properties).toMatchObject({
      UserPoolName: 'revenue-analytics-backoffice-prod',
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      UsernameAttributes: ['email'],
      MfaConfiguration: 'ON',
      EnabledMfas: ['SOFTWARE_TOKEN_MFA'],
      Policies: {
        PasswordPolicy: {
          MinimumLength: 12,
          RequireLowercase: true,
          RequireUppercase: true,
          RequireNumbers: true,
          RequireSymbols: true,
          TemporaryPasswordValidityDays: 3,
        },
      },
      AccountRecoverySetting: { RecoveryMechanisms: [{ Name: 'verified_email', Priority: 1 }] },
      UserPoolTier: 'LITE',
      DeletionProtection: 'ACTIVE',
    });
    expect(resource.Properties.Schema).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Name: 'merchant_id', AttributeDataType: 'String', Mutable: false }),
        expect.objectContaining({ Name: 'email', Required: true }),
      ]),
    );
    expect(resource.DeletionPolicy).toBe('Retain');
    const devPool = only(dev, 'AWS::Cognito::UserPool').resource;
    expect(devPool.DeletionPolicy).toBe('Delete');
    expect(devPool.Properties).toMatchObject({ UserPoolName: 'revenue-analytics-backoffice-dev', DeletionProtection: 'INACTIVE' });
  });

  it('groups admin and user in that pool', () => {
    const pool = only(prod, 'AWS::Cognito::UserPool').id;
    const groups = Object.values(prod.findResources('AWS::Cognito::UserPoolGroup')).map((g) => g.Properties);
    expect(groups.map((g) => g.GroupName).sort()).toEqual(['admin', 'user']);
    for (const g of groups) expect(g.UserPoolId).toEqual({ Ref: pool });
  });

  /** The two app clients: the back office's (SRP) and the dashboard's (hosted UI). */
  const clients = (template: Template) => {
    const all = Object.entries(template.findResources('AWS::Cognito::UserPoolClient')) as [string, { Properties: Record<string, any> }][];
    expect(all).toHaveLength(2);
    const [backoffice, dashboard] = [
      all.find(([, c]) => c.Properties.ExplicitAuthFlows?.includes('ALLOW_USER_SRP_AUTH'))!,
      all.find(([, c]) => c.Properties.AllowedOAuthFlowsUserPoolClient)!,
    ];
    return { backoffice: { id: backoffice[0], resource: backoffice[1] }, dashboard: { id: dashboard[0], resource: dashboard[1] } };
  };

  it('the dashboard client: hosted UI code flow (PKCE, no secret) back to the CloudFront URL only, cannot write merchant_id', () => {
    const { resource } = clients(prod).dashboard;
    expect(resource.Properties.GenerateSecret ?? false).toBe(false);
    expect(resource.Properties).toMatchObject({
      AllowedOAuthFlows: ['code'],
      SupportedIdentityProviders: ['COGNITO'],
      PreventUserExistenceErrors: 'ENABLED',
    });
    expect([...resource.Properties.AllowedOAuthScopes].sort()).toEqual(['email', 'openid']);
    // The dashboard's distribution (the API's own has no Origin Access Control: test/infra/edge.test.ts).
    const distribution = Object.entries(prod.findResources('AWS::CloudFront::Distribution'))
      .filter(([, d]) => (d as any).Properties.DistributionConfig.Origins[0].OriginAccessControlId)
      .map(([id]) => id);
    expect(distribution).toHaveLength(1);
    const url = { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distribution[0], 'DomainName'] }, '/']] };
    expect(resource.Properties.CallbackURLs).toEqual([url]);
    expect(resource.Properties.LogoutURLs).toEqual([url]);
    expect(resource.Properties.ReadAttributes).toContain('custom:merchant_id');
    expect(resource.Properties.WriteAttributes ?? []).not.toContain('custom:merchant_id');
    expect(Object.keys(prod.findResources('AWS::Cognito::UserPoolDomain'))).toHaveLength(1);
  });

  it('one back-office app client: no secret, SRP only, no OAuth flows, cannot write merchant_id', () => {
    const { resource } = clients(prod).backoffice;
    expect(resource.Properties.GenerateSecret ?? false).toBe(false);
    expect([...resource.Properties.ExplicitAuthFlows].sort()).toEqual(['ALLOW_REFRESH_TOKEN_AUTH', 'ALLOW_USER_SRP_AUTH']);
    expect(resource.Properties.AllowedOAuthFlowsUserPoolClient).toBe(false);
    expect(resource.Properties).toMatchObject({ PreventUserExistenceErrors: 'ENABLED', EnableTokenRevocation: true });
    expect(resource.Properties.ReadAttributes).toContain('custom:merchant_id');
    expect(resource.Properties.WriteAttributes).not.toContain('custom:merchant_id');
  });

  it('a JWT authorizer for that pool and client, on exactly the back-office routes', () => {
    const pool = only(prod, 'AWS::Cognito::UserPool').id;
    const {
      backoffice: { id: client },
      dashboard: { id: dashboardClient },
    } = clients(prod);
    const { id: authorizer, resource } = only(prod, 'AWS::ApiGatewayV2::Authorizer');
    expect(resource.Properties).toMatchObject({
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Audience: [{ Ref: client }, { Ref: dashboardClient }] },
    });
    // ProviderURL: https://cognito-idp.<region>.amazonaws.com/<pool id>, the `iss` of the pool's tokens.
    expect(resource.Properties.JwtConfiguration.Issuer).toEqual({ 'Fn::GetAtt': [pool, 'ProviderURL'] });

    const routes = Object.values(prod.findResources('AWS::ApiGatewayV2::Route')).map((r) => r.Properties);
    const backoffice = routeList.filter((r) => authKindOf(r) === 'backoffice').map((r) => `${r.method} ${BASE_PATH}${r.path}`);
    expect(backoffice.sort()).toEqual([
      'DELETE /v1/backoffice/api-token',
      'GET /v1/backoffice/api-token',
      'GET /v1/backoffice/me',
      'POST /v1/backoffice/api-token',
      'POST /v1/backoffice/api-token/regenerate',
      'PUT /v1/settings',
    ]);
    for (const route of routes) {
      if (backoffice.includes(route.RouteKey)) {
        expect(route, route.RouteKey).toMatchObject({ AuthorizationType: 'JWT', AuthorizerId: { Ref: authorizer } });
      } else {
        // API token routes are authorised by the function's pipeline (the token is looked up afresh).
        expect(route.AuthorizationType ?? 'NONE', route.RouteKey).toBe('NONE');
        expect(route.AuthorizerId, route.RouteKey).toBeUndefined();
      }
    }
    prod.hasOutput('*', { Value: { Ref: pool } });
    prod.hasOutput('*', { Value: { Ref: client } });
  });

  it('back-office functions read the merchant (view: read access), the others write', () => {
    const kinds = Object.fromEntries(routeList.filter((r) => authKindOf(r) === 'backoffice').map((r) => [r.name, tableAccessFor(r)]));
    expect(kinds).toEqual({
      backofficeMe: 'read',
      backofficeTokenView: 'read',
      backofficeTokenCreate: 'tokens',
      backofficeTokenRegenerate: 'tokens',
      backofficeTokenRevoke: 'tokens',
      // The merchant's time zone, and its copy on the valid token; a new generation of the figures.
      settingsPut: 'recount',
    });
  });
});
