import { ArnFormat, CfnOutput, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { CfnLoggingConfiguration, CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { forbidden, tooManyAttempts } from '#lib/http/errors';

/** CloudFront web ACLs (scope CLOUDFRONT) exist only in us-east-1, whatever region the API is in. */
export const EDGE_REGION = 'us-east-1';
/** The edge stack's output the API stack's distribution reads (Fn::GetStackOutput). */
export const WEB_ACL_ARN_OUTPUT = 'WebAclArn';
/** The window the per-IP rule counts over, in seconds (WAF offers 60, 120, 300 and 600). */
export const WAF_WINDOW_SECONDS = 300;
/** WAF's smallest rate-based limit. */
const WAF_MIN_LIMIT = 10;

/**
 * The per-IP limit per `WAF_WINDOW_SECONDS`, from the API's own limits: the most one caller can
 * send in that window without ever meeting the API's own 429, so WAF never answers before the
 * API would. The merchant's window is the clock hour, so its whole hourly budget can come at the
 * end of one hour and again at the start of the next: 2 × `rateLimitPerHour` in five minutes (7,200
 * by default: 24 a second on average, a quarter of a route's default stage bucket of 100/s). The
 * per-IP minute window of requests without a valid token touches at most 6 clock minutes in five
 * minutes: 6 × `unauthenticatedPerMinute` (60 by default, below the merchant figure).
 */
export const wafRateLimitFor = (rateLimitPerHour: number, unauthenticatedPerMinute: number): number =>
  Math.max(WAF_MIN_LIMIT, 2 * rateLimitPerHour, (WAF_WINDOW_SECONDS / 60 + 1) * unauthenticatedPerMinute);

/** `Retry-After` of WAF's 429: an IP that sends nothing for one window is always under the limit again. */
export const WAF_RETRY_AFTER_SECONDS = WAF_WINDOW_SECONDS;
/** The AWS managed rule groups, in order, and what is blocked on their labels (`BlockManagedMatches`). */
export const MANAGED_RULE_GROUPS: readonly { name: string; block: readonly { scope: 'LABEL' | 'NAMESPACE'; key: string }[] }[] = [
  // Amazon threat intelligence: its reputation and reconnaissance lists block by AWS's default; its
  // DDoS list only counts by AWS's default (shared addresses, false positives), and so here.
  {
    name: 'AWSManagedRulesAmazonIpReputationList',
    block: [
      { scope: 'LABEL', key: 'awswaf:managed:aws:amazon-ip-list:AWSManagedIPReputationList' },
      { scope: 'LABEL', key: 'awswaf:managed:aws:amazon-ip-list:AWSManagedReconnaissanceList' },
    ],
  },
  // Request patterns of known exploits (Log4j, Java deserialization, localhost Host, exploitable paths): every rule.
  { name: 'AWSManagedRulesKnownBadInputsRuleSet', block: [{ scope: 'NAMESPACE', key: 'awswaf:managed:aws:known-bad-inputs:' }] },
];

export type EdgeStackProps = StackProps & {
  /** The API's stage: names the web ACL and its log group. */
  stage: string;
  /** Requests per IP per `WAF_WINDOW_SECONDS` (see `wafRateLimitFor`). */
  rateLimit: number;
  /**
   * What the labels of the managed rule groups do: `block` (403 with the API's error body), or
   * `count` (only counted and logged: a first deploy that watches for false positives).
   */
  managedRulesAction?: 'block' | 'count';
};

/** The body WAF answers with: the API's own (lib/http/errors.ts), so clients read one format. */
export const WAF_BODIES = { tooManyRequests: tooManyAttempts(1).body, forbidden: forbidden().body } as const;

/**
 * The web ACL in front of the API's CloudFront distribution (docs/deployment-and-protection.md, *In
 * front of the functions*): a stack of its own in us-east-1, deployed before the API stack, which
 * reads `WebAclArn` from it. The managed groups count and label; one rule blocks on their labels
 * (403); the per-IP rule answers 429 with the API's body and `Retry-After`. Blocked and counted
 * requests are logged (Authorization redacted).
 */
export class EdgeStack extends Stack {
  readonly webAcl: CfnWebACL;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: EdgeStackProps) {
    super(scope, id, { ...props, env: { account: props.env?.account, region: EDGE_REGION } });
    if (!Number.isInteger(props.rateLimit) || props.rateLimit < WAF_MIN_LIMIT)
      throw new Error(`the per-IP WAF limit must be an integer of at least ${WAF_MIN_LIMIT}, got ${props.rateLimit}`);
    const name = `revenue-analytics-api-${props.stage}`;
    const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, metricName, sampledRequestsEnabled: true });
    const block = (status: number, body: keyof typeof WAF_BODIES, headers: Record<string, string> = {}) => ({
      block: {
        customResponse: {
          responseCode: status,
          customResponseBodyKey: body,
          ...(Object.keys(headers).length ? { responseHeaders: Object.entries(headers).map(([name, value]) => ({ name, value })) } : {}),
        },
      },
    });
    const labelRules: CfnWebACL.StatementProperty[] = MANAGED_RULE_GROUPS.flatMap((g) =>
      g.block.map((label) => ({ labelMatchStatement: { ...label } })),
    );

    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      name,
      scope: 'CLOUDFRONT',
      description: `Revenue analytics API, stage ${props.stage}: per-IP rate limit and AWS managed rules in front of its CloudFront distribution`,
      defaultAction: { allow: {} },
      visibilityConfig: visibility(name),
      customResponseBodies: Object.fromEntries(
        Object.entries(WAF_BODIES).map(([key, body]) => [key, { contentType: 'APPLICATION_JSON', content: JSON.stringify(body) }]),
      ),
      rules: [
        ...MANAGED_RULE_GROUPS.map((g, priority) => ({
          name: g.name,
          priority,
          // Count: the group only labels; `BlockManagedMatches` decides, with the API's body.
          overrideAction: { count: {} },
          statement: { managedRuleGroupStatement: { vendorName: 'AWS', name: g.name } },
          visibilityConfig: visibility(g.name),
        })),
        {
          name: 'BlockManagedMatches',
          priority: MANAGED_RULE_GROUPS.length,
          action: props.managedRulesAction === 'count' ? { count: {} } : block(403, 'forbidden'),
          statement: { orStatement: { statements: labelRules } },
          visibilityConfig: visibility('BlockManagedMatches'),
        },
        {
          name: 'PerIpRateLimit',
          priority: MANAGED_RULE_GROUPS.length + 1,
          action: block(429, 'tooManyRequests', { 'Retry-After': String(WAF_RETRY_AFTER_SECONDS) }),
          statement: { rateBasedStatement: { aggregateKeyType: 'IP', limit: props.rateLimit, evaluationWindowSec: WAF_WINDOW_SECONDS } },
          visibilityConfig: visibility('PerIpRateLimit'),
        },
      ],
    });

    // WAF logs to CloudWatch only into groups named aws-waf-logs-…, given by ARN without the `:*`.
    const logGroupName = `aws-waf-logs-${name}`;
    this.logGroup = new LogGroup(this, 'Logs', { logGroupName, retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
    new CfnLoggingConfiguration(this, 'Logging', {
      resourceArn: this.webAcl.attrArn,
      logDestinationConfigs: [
        this.formatArn({ service: 'logs', resource: 'log-group', resourceName: logGroupName, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
      ],
      // Merchants' API tokens never reach a log.
      redactedFields: [{ singleHeader: { Name: 'authorization' } }],
      // Only what a rule blocked or counted: allowed requests are in the API's own access log.
      loggingFilter: {
        DefaultBehavior: 'DROP',
        Filters: [
          {
            Behavior: 'KEEP',
            Requirement: 'MEETS_ANY',
            Conditions: [{ ActionCondition: { Action: 'BLOCK' } }, { ActionCondition: { Action: 'COUNT' } }],
          },
        ],
      },
    }).node.addDependency(this.logGroup);

    new CfnOutput(this, WEB_ACL_ARN_OUTPUT, {
      value: this.webAcl.attrArn,
      description: 'The web ACL of the API distribution (read by the API stack)',
    });
  }
}
