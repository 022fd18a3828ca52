import {
  AdminAddUserToGroupCommand,
  AdminCreateUserCommand,
  type AdminCreateUserCommandOutput,
  CognitoIdentityProviderClient,
  UsernameExistsException,
} from '@aws-sdk/client-cognito-identity-provider';
import { CLAIMS, type BackofficeRole } from '#lib/auth/backoffice';
import { HttpError } from '#lib/http/errors';

/**
 * A back-office user in the stack's Cognito user pool: signs in with the e-mail (Cognito sends a
 * temporary password), holds the merchant in the immutable `custom:merchant_id` attribute and the
 * role as its group.
 */
export const createCognitoBackofficeUser = async (input: { poolId: string; merchantId: string; email: string; role: BackofficeRole }) => {
  const cognito = new CognitoIdentityProviderClient({});
  let created: AdminCreateUserCommandOutput;
  try {
    created = await cognito.send(
      new AdminCreateUserCommand({
        UserPoolId: input.poolId,
        Username: input.email,
        UserAttributes: [
          { Name: 'email', Value: input.email },
          { Name: 'email_verified', Value: 'true' },
          { Name: CLAIMS.merchant, Value: input.merchantId },
        ],
        DesiredDeliveryMediums: ['EMAIL'],
      }),
    );
  } catch (err) {
    if (err instanceof UsernameExistsException)
      throw new HttpError(409, { message: `A back-office user ${input.email} already exists in ${input.poolId}.` });
    throw err;
  }
  const username = created.User?.Username ?? input.email;
  await cognito.send(new AdminAddUserToGroupCommand({ UserPoolId: input.poolId, Username: username, GroupName: input.role }));
  return {
    created: true,
    user_pool_id: input.poolId,
    username,
    email: input.email,
    merchant_id: input.merchantId,
    role: input.role,
    status: created.User?.UserStatus ?? null,
  };
};
