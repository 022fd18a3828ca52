import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeList } from '#lib/api/routes';
import { DASHBOARD_CSP } from '../../web/security-headers.ts';
import { fixtureProjectRoot, idOf, synthStack } from './support/stack.ts';

/** The dashboard's site in the template: private bucket, CloudFront with OAC and security headers, upload, CORS, env. */
let fixture: ReturnType<typeof fixtureProjectRoot>;
let unbuilt: ReturnType<typeof synthStack>;
let built: ReturnType<typeof synthStack>;
beforeAll(() => {
  fixture = fixtureProjectRoot();
  unbuilt = synthStack(fixture.root);
  mkdirSync(join(fixture.root, 'web', 'dist', 'assets'), { recursive: true });
  writeFileSync(join(fixture.root, 'web', 'dist', 'index.html'), '<!doctype html><title>t</title>');
  built = synthStack(fixture.root);
});
afterAll(() => fixture.remove());

const one = (template: Template, type: string) => {
  const found = Object.entries(template.findResources(type));
  expect(found, type).toHaveLength(1);
  return { id: found[0][0], props: (found[0][1] as { Properties: Record<string, any> }).Properties };
};

/** The dashboard's distribution (the API has one of its own: test/infra/edge.test.ts). */
const dashboardDistribution = (s: typeof unbuilt) => {
  const id = idOf(s.stack, s.stack.dashboard.distribution);
  return { id, props: (s.template.findResources('AWS::CloudFront::Distribution')[id] as { Properties: Record<string, any> }).Properties };
};

describe('dashboard site (CDK)', () => {
  it('a private bucket: public access blocked, TLS enforced, encrypted', () => {
    const { template } = unbuilt;
    const bucket = one(template, 'AWS::S3::Bucket');
    expect(bucket.props.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(bucket.props.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toBe('AES256');
    const statements = one(template, 'AWS::S3::BucketPolicy').props.PolicyDocument.Statement as {
      Effect: string;
      Condition?: unknown;
      Principal: any;
    }[];
    expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    // Only CloudFront (through the distribution's OAC) may read, for this distribution.
    const reads = statements.filter((s) => s.Effect === 'Allow');
    expect(reads).toHaveLength(1);
    expect(reads[0].Principal).toEqual({ Service: 'cloudfront.amazonaws.com' });
  });

  it('CloudFront: OAC origin, HTTPS only, TLS 1.2 (2021), the security headers policy', () => {
    const { template } = unbuilt;
    const dist = dashboardDistribution(unbuilt).props.DistributionConfig;
    const oac = one(template, 'AWS::CloudFront::OriginAccessControl');
    expect(dist.Origins[0].OriginAccessControlId).toEqual({ 'Fn::GetAtt': [oac.id, 'Id'] });
    expect(dist).toMatchObject({ DefaultRootObject: 'index.html', DefaultCacheBehavior: { ViewerProtocolPolicy: 'redirect-to-https' } });
    expect(dist.ViewerCertificate?.MinimumProtocolVersion ?? 'TLSv1.2_2021').toBe('TLSv1.2_2021');
    const policy = one(template, 'AWS::CloudFront::ResponseHeadersPolicy');
    expect(dist.DefaultCacheBehavior.ResponseHeadersPolicyId).toEqual({ Ref: policy.id });
    expect(policy.props.ResponseHeadersPolicyConfig.SecurityHeadersConfig).toMatchObject({
      ContentSecurityPolicy: { ContentSecurityPolicy: DASHBOARD_CSP, Override: true },
      FrameOptions: { FrameOption: 'DENY' },
      ContentTypeOptions: { Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer' },
      StrictTransportSecurity: { AccessControlMaxAgeSec: 730 * 86400, IncludeSubdomains: true },
    });
  });

  it('uploads web/dist and config.json only when the bundle is built (synth works without it)', () => {
    expect(Object.keys(unbuilt.template.findResources('Custom::CDKBucketDeployment'))).toHaveLength(0);
    const upload = one(built.template, 'Custom::CDKBucketDeployment');
    expect(upload.props.DistributionPaths).toEqual(['/index.html', '/config.json']);
    expect(upload.props.SourceObjectKeys).toHaveLength(2);
  });

  it('the API answers CORS for the dashboard origin only; dashboard routes get the issuer and the dashboard client as audience', () => {
    const { stack, template } = unbuilt;
    const distribution = dashboardDistribution(unbuilt).id;
    const api = one(template, 'AWS::ApiGatewayV2::Api');
    expect(api.props.CorsConfiguration.AllowOrigins).toEqual([
      { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distribution, 'DomainName'] }]] },
    ]);
    expect(api.props.CorsConfiguration.AllowHeaders).toEqual(['authorization', 'content-type']);
    // The dashboard edits webhook endpoints (PATCH), saves the settings (PUT) and pages its CSV downloads by X-Next-Cursor.
    expect(api.props.CorsConfiguration.AllowMethods).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    expect(api.props.CorsConfiguration.ExposeHeaders).toEqual(
      expect.arrayContaining(['x-next-cursor', 'x-total-count', 'recount-pending']),
    );
    const pool = one(template, 'AWS::Cognito::UserPool').id;
    const dashboardClient = Object.entries(template.findResources('AWS::Cognito::UserPoolClient')).find(
      ([, c]) => (c as any).Properties.AllowedOAuthFlowsUserPoolClient,
    )![0];
    const functions = template.findResources('AWS::Lambda::Function');
    for (const route of routeList) {
      const env = (functions[idOf(stack, stack.functions[route.name])] as any).Properties.Environment.Variables;
      if (route.dashboard) {
        expect(env.BACKOFFICE_JWT_ISSUER, route.name).toEqual({ 'Fn::GetAtt': [pool, 'ProviderURL'] });
        expect(env.BACKOFFICE_JWT_AUDIENCE, route.name).toEqual({ Ref: dashboardClient });
      } else {
        expect(env.BACKOFFICE_JWT_ISSUER, route.name).toBeUndefined();
      }
    }
  });
});
