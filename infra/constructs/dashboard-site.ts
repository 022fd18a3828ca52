import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, type CfnElement, CfnOutput, DefaultStackSynthesizer, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  PriceClass,
  ResponseHeadersPolicy,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { DASHBOARD_CSP } from '../../web/security-headers.ts';

export type DashboardSiteProps = {
  /** Where `web/dist` is looked for (the project root). */
  projectRoot: string;
  /** Keep the bucket when the stack is deleted (`retainTable`); else it is emptied and deleted. */
  retain: boolean;
};

/** What the page reads from `/config.json` (web/src/auth.ts `DashboardConfig`). */
export type DashboardConfig = {
  apiBase: string;
  auth: { kind: 'cognito'; domain: string; clientId: string; redirectUri: string };
};

/**
 * The merchant dashboard (web/): a private S3 bucket (public access blocked, TLS only) read by
 * CloudFront through Origin Access Control, with the security headers of web/security-headers.ts.
 * `deploy` uploads `web/dist` (built by `npm run web:build`) and the page's `config.json`; without a
 * built bundle synth still works (offline, tests) and skips the upload with a warning.
 */
export class DashboardSite extends Construct {
  readonly bucket: Bucket;
  readonly distribution: Distribution;
  /** `https://<id>.cloudfront.net/` — the Cognito callback and the API's CORS origin (without the slash). */
  readonly url: string;
  readonly origin: string;
  private readonly props: DashboardSiteProps;

  constructor(scope: Construct, id: string, props: DashboardSiteProps) {
    super(scope, id);
    this.props = props;
    this.bucket = new Bucket(this, 'Bucket', {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: BucketEncryption.S3_MANAGED,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: false,
      removalPolicy: props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      autoDeleteObjects: !props.retain,
    });
    const headers = new ResponseHeadersPolicy(this, 'SecurityHeaders', {
      comment: 'Revenue dashboard: CSP, HSTS, no framing, no sniffing, no referrer',
      securityHeadersBehavior: {
        contentSecurityPolicy: { contentSecurityPolicy: DASHBOARD_CSP, override: true },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(730), includeSubdomains: true, preload: false, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Revenue analytics merchant dashboard',
      defaultRootObject: 'index.html',
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: headers,
        compress: true,
      },
    });
    this.origin = `https://${this.distribution.distributionDomainName}`;
    this.url = `${this.origin}/`;
    new CfnOutput(this, 'Url', { value: this.url, description: 'The merchant dashboard' });

    // cdk-nag (AwsSolutions) findings this construct accepts, each with its reason.
    const accepted: [Construct, string, string][] = [
      [this.bucket, 'AwsSolutions-S1', 'The bucket holds only the public, rebuildable dashboard bundle; reads are logged by CloudFront (standard logs can be enabled per stage).'],
      [this.distribution, 'AwsSolutions-CFR1', 'The dashboard is for merchants anywhere: no geo restriction.'],
      [this.distribution, 'AwsSolutions-CFR2', 'A static bundle with no server side; every API call is authenticated and rate-limited by the API itself. No WAF web ACL for it.'],
      [this.distribution, 'AwsSolutions-CFR3', 'Access logs of a static bundle are not needed; API calls are logged by API Gateway.'],
      [this.distribution, 'AwsSolutions-CFR4', 'TLSv1.2_2021 is requested; with the default *.cloudfront.net certificate CloudFront reports TLSv1 until a custom domain and ACM certificate are added.'],
    ];
    for (const [target, id, reason] of accepted) Validations.of(target).acknowledge({ id, reason });
    if (!props.retain) acknowledgeCdkHandlers(this.bucket, 'Custom::S3AutoDeleteObjects', []);
    // No custom domain yet: the default certificate keeps CloudFront's own TLS floor (see CFR4).
    Validations.of(this.distribution).acknowledge({
      id: 'Annotation::@aws-cdk/aws-cloudfront:minimumProtocolVersionWithoutCertificate',
      reason: 'TLSv1.2_2021 takes effect once a custom domain and ACM certificate are configured; until then the *.cloudfront.net certificate applies.',
    });
  }

  /**
   * Uploads `web/dist` and `config.json` (deploy-time values: API URL, Cognito domain and client),
   * and invalidates the two files that are not content-hashed. No-op with a warning when the bundle
   * has not been built.
   */
  deploy(config: DashboardConfig): BucketDeployment | null {
    const dist = join(this.props.projectRoot, 'web', 'dist');
    if (!existsSync(join(dist, 'index.html'))) {
      Annotations.of(this).addWarningV2(
        'revenue-analytics:dashboardNotBuilt',
        'web/dist is missing: the dashboard is not uploaded. Run `npm run web:build` before `cdk deploy`.',
      );
      return null;
    }
    const deployment = new BucketDeployment(this, 'Deployment', {
      destinationBucket: this.bucket,
      sources: [Source.asset(dist), Source.jsonData('config.json', config)],
      cacheControl: [CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: ['/index.html', '/config.json'],
      memoryLimit: 256,
    });
    // cdk-nag 3 names each wildcard it finds: the grants CDK gives its upload handler, one by one.
    const stack = Stack.of(this);
    const bucketId = stack.resolve(stack.getLogicalId(this.bucket.node.defaultChild as CfnElement)) as string;
    const qualifier = this.node.tryGetContext('@aws-cdk/core:bootstrapQualifier') ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
    acknowledgeCdkHandlers(deployment, 'Custom::CDKBucketDeployment', [
      ...['s3:GetBucket*', 's3:GetObject*', 's3:List*', 's3:Abort*', 's3:DeleteObject*'].map((a) => `Action::${a}`),
      'Resource::*',
      `Resource::<${bucketId}.Arn>/*`,
      `Resource::arn:<AWS::Partition>:s3:::cdk-${qualifier}-assets-<AWS::AccountId>-<AWS::Region>/*`,
    ]);
    return deployment;
  }
}

/**
 * CDK's own custom-resource handlers (the upload, the bucket emptying on delete) are singletons at
 * the stack's root: their findings are acknowledged there and on the construct that uses them.
 * `wildcards`: the IAM5 findings (cdk-nag 3 acknowledges each `Action::…` / `Resource::…` apart).
 */
const acknowledgeCdkHandlers = (user: Construct, handlerIdPrefix: string, wildcards: string[]) => {
  const handlers = Stack.of(user).node.children.filter((c) => c.node.id.startsWith(handlerIdPrefix));
  const findings: [string, string][] = [
    ['AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]', 'A CDK-provided custom-resource handler: it uses the AWS-managed basic execution role for its logs.'],
    ['AwsSolutions-L1', 'A CDK-provided custom-resource handler: CDK pins its runtime.'],
    ...wildcards.map((w): [string, string] => [`AwsSolutions-IAM5[${w}]`, "A CDK-provided custom-resource handler: CDK scopes these grants to this bucket's objects, the asset objects and CloudFront invalidations."]),
  ];
  for (const target of [user, ...handlers]) for (const [id, reason] of findings) Validations.of(target).acknowledge({ id, reason });
};
