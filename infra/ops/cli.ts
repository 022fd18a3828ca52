import { parseArgs } from 'node:util';
import { ABILITIES, type Ability } from '#lib/http/route';
import { HttpError } from '#lib/http/errors';
import { createMerchant, createToken, regenerateToken, revokeToken } from '#lib/merchants/store';

/**
 * Operator tooling: `npm run ops -- <resource> <action> [options]`. Talks to the DynamoDB named by
 * DYNAMODB_ENDPOINT (local) or the default AWS credentials chain, and the table TABLE_NAME.
 */
const USAGE = `usage:
  ops merchant create --name NAME [--currency TWD]
  ops token create --merchant ID [--abilities customers:read,orders:read]
  ops token regenerate --merchant ID
  ops token revoke --merchant ID`;

export const runOps = async (argv: string[]): Promise<unknown> => {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      currency: { type: 'string' },
      merchant: { type: 'string' },
      abilities: { type: 'string' },
    },
  });
  const [resource, action] = positionals;
  const need = (v: string | undefined, flag: string): string => {
    if (!v) throw new UsageError(`--${flag} is required`);
    return v;
  };
  switch (`${resource} ${action}`) {
    case 'merchant create':
      return createMerchant(need(values.name, 'name'), values.currency);
    case 'token create': {
      const abilities = values.abilities?.split(',').map((a) => a.trim()).filter(Boolean);
      const unknown = abilities?.filter((a) => !(ABILITIES as readonly string[]).includes(a));
      if (unknown?.length) throw new UsageError(`unknown abilities: ${unknown.join(', ')} (known: ${ABILITIES.join(', ')})`);
      return createToken(need(values.merchant, 'merchant'), abilities as Ability[] | undefined);
    }
    case 'token regenerate':
      return regenerateToken(need(values.merchant, 'merchant'));
    case 'token revoke':
      return revokeToken(need(values.merchant, 'merchant'));
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ') || '(none)'}`);
  }
};

class UsageError extends Error {}

const main = async () => {
  try {
    const result = await runOps(process.argv.slice(2));
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (err instanceof HttpError) {
      process.stderr.write(`${JSON.stringify({ error: err.body.message, status: err.status })}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
};

if (import.meta.url === `file://${process.argv[1]}`) void main();
