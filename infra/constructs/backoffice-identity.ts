import { CfnOutput, Duration, RemovalPolicy } from 'aws-cdk-lib';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import {
  AccountRecovery,
  ClientAttributes,
  FeaturePlan,
  Mfa,
  OAuthScope,
  StringAttribute,
  UserPool,
  UserPoolClientIdentityProvider,
  type UserPoolClient,
  type UserPoolDomain,
} from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import { BACKOFFICE_ROLES, CLAIMS } from '#lib/auth/backoffice';

export type BackofficeIdentityProps = {
  stage: string;
  /**
   * The merchant dashboard (infra/constructs/dashboard-site.ts): a second app client that signs in
   * through the hosted UI (authorization code + PKCE) and returns to `callbackUrl`, on a Cognito
   * domain `domainPrefix`. Its ID tokens are also accepted by the JWT authorizer.
   */
  dashboard?: { callbackUrl: string; domainPrefix: string };
  /** Keep the pool (its users) when the stack is deleted, and protect it from deletion. */
  retain: boolean;
};

/** `custom:merchant_id` → `merchant_id`: the attribute as the pool declares it. */
const MERCHANT_ATTRIBUTE = CLAIMS.merchant.replace(/^custom:/, '');

/**
 * Back-office users (docs/authentication-and-limits.md): a Cognito user pool whose groups (`admin`, `user`) give the role
 * and whose immutable `custom:merchant_id` attribute gives the merchant, and the HTTP API JWT
 * authorizer that verifies their ID tokens for the back-office routes (the functions only read the
 * claims it passes). Operators create users with `npm run ops -- backoffice-user create`; nobody
 * signs up.
 */
export class BackofficeIdentity extends Construct {
  readonly userPool: UserPool;
  readonly client: UserPoolClient;
  readonly authorizer: HttpJwtAuthorizer;
  /** The dashboard's app client and hosted-UI domain (with `dashboard`). */
  readonly dashboardClient?: UserPoolClient;
  readonly domain?: UserPoolDomain;
  /** The ID tokens' issuer (the pool's provider URL). */
  readonly issuer: string;

  constructor(scope: Construct, id: string, props: BackofficeIdentityProps) {
    super(scope, id);
    this.userPool = new UserPool(this, 'UserPool', {
      userPoolName: `revenue-analytics-backoffice-${props.stage}`,
      // Lite: the cheapest plan; nothing here needs managed login or threat protection's price.
      featurePlan: FeaturePlan.LITE,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      // Set once by the operator; neither the user nor an app client can change it.
      customAttributes: { [MERCHANT_ATTRIBUTE]: new StringAttribute({ minLen: 5, maxLen: 68, mutable: false }) },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      // These users issue and revoke API tokens: a second factor (authenticator app) is required.
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      userInvitation: {
        emailSubject: 'Your revenue analytics back-office account',
        emailBody: 'Sign in to the back office with {username} and the temporary password {####}.',
      },
      deletionProtection: props.retain,
      removalPolicy: props.retain ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    BACKOFFICE_ROLES.forEach((role, precedence) =>
      this.userPool.addGroup(`${role.charAt(0).toUpperCase()}${role.slice(1)}Group`, {
        groupName: role,
        description: role === 'admin' ? 'View, create, regenerate and revoke the API token' : 'View the API token',
        precedence,
      }),
    );
    // Both clients are public (no secret), with 1 h ID tokens that can read merchant_id and never write it.
    const publicClient = {
      generateSecret: false,
      preventUserExistenceErrors: true,
      enableTokenRevocation: true,
      idTokenValidity: Duration.hours(1),
      accessTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.hours(12),
      readAttributes: new ClientAttributes()
        .withStandardAttributes({ email: true, emailVerified: true })
        .withCustomAttributes(MERCHANT_ATTRIBUTE),
    };
    // The back-office client: SRP sign-in only, no hosted OAuth flows.
    this.client = this.userPool.addClient('Client', {
      ...publicClient,
      userPoolClientName: `revenue-analytics-backoffice-${props.stage}`,
      authFlows: { userSrp: true },
      disableOAuth: true,
      writeAttributes: new ClientAttributes().withStandardAttributes({ email: true }),
    });
    if (props.dashboard) {
      this.domain = this.userPool.addDomain('HostedUi', { cognitoDomain: { domainPrefix: props.dashboard.domainPrefix } });
      this.dashboardClient = this.userPool.addClient('DashboardClient', {
        ...publicClient,
        userPoolClientName: `revenue-analytics-dashboard-${props.stage}`,
        authFlows: {},
        oAuth: {
          flows: { authorizationCodeGrant: true },
          scopes: [OAuthScope.OPENID, OAuthScope.EMAIL],
          callbackUrls: [props.dashboard.callbackUrl],
          logoutUrls: [props.dashboard.callbackUrl],
        },
        supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
        writeAttributes: new ClientAttributes(),
      });
      new CfnOutput(this, 'HostedUiDomain', { value: this.domain.baseUrl(), description: "The dashboard's sign-in (Cognito hosted UI)" });
    }
    this.issuer = this.userPool.userPoolProviderUrl;
    // The ID token carries the groups and the merchant attribute; its `aud` is the client id.
    this.authorizer = new HttpJwtAuthorizer('BackofficeAuthorizer', this.issuer, {
      authorizerName: 'backoffice-cognito',
      jwtAudience: [this.client.userPoolClientId, ...(this.dashboardClient ? [this.dashboardClient.userPoolClientId] : [])],
    });

    new CfnOutput(this, 'UserPoolId', {
      value: this.userPool.userPoolId,
      description: 'BACKOFFICE_USER_POOL_ID for `ops backoffice-user create`',
    });
    new CfnOutput(this, 'UserPoolClientId', {
      value: this.client.userPoolClientId,
      description: 'The back-office app client (audience of the JWT authorizer)',
    });
  }
}
