import { useState } from 'preact/hooks';
import { ApiError, ok, type Api, type Me } from '../api';
import { when } from '../format';
import { Panel, ShownOnce, useAsync } from '../ui';

/** 404 means "no valid token": the panel's empty state, not an error. */
const viewOrNull = (api: Api) =>
  ok(api.GET('/backoffice/api-token')).then(
    (r) => r.data,
    (err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    },
  );

export const TokenView = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => viewOrNull(api));
  const [issued, setIssued] = useState<string | null>(null);
  const [error, setError] = useState('');
  const act = async (what: 'create' | 'regenerate' | 'revoke') => {
    const question = {
      create: 'Create an API token with every ability?',
      regenerate: 'Regenerate the token? The current one stops working immediately.',
      revoke: 'Revoke the token? Integrations using it stop working immediately, and this cannot be undone.',
    }[what];
    if (!confirm(question)) return;
    setError('');
    try {
      if (what === 'revoke') await ok(api.DELETE('/backoffice/api-token'));
      else
        setIssued(
          (await ok(what === 'create' ? api.POST('/backoffice/api-token') : api.POST('/backoffice/api-token/regenerate'))).data.token,
        );
      retry();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const admin = me.role === 'admin';
  return (
    <div class="grid">
      <Panel id="token" title="API token" wide result={result} retry={retry}>
        {(token) => (
          <>
            {issued && (
              <ShownOnce
                title="Your new API token"
                note="It is shown only now: store it in your secrets manager before you leave this page."
                label="New API token"
                value={issued}
                testId="issued-token"
                onDone={() => setIssued(null)}
              />
            )}
            {token ? (
              <dl class="token" data-testid="token-view">
                <dt>Token</dt>
                <dd>
                  <code>
                    {token.prefix}…{token.last_four}
                  </code>
                </dd>
                <dt>Created</dt>
                <dd>{when(token.created_at)}</dd>
                <dt>Last used</dt>
                <dd>{token.last_used_at ? when(token.last_used_at) : 'never'}</dd>
                <dt>Abilities</dt>
                <dd>{token.abilities.join(', ')}</dd>
              </dl>
            ) : (
              <p class="state empty">No valid API token.{admin ? ' Create one to connect an integration.' : ' An admin can create one.'}</p>
            )}
            {admin ? (
              <div class="actions" data-testid="token-actions">
                {token ? (
                  <>
                    <button type="button" onClick={() => act('regenerate')}>
                      Regenerate
                    </button>
                    <button type="button" class="danger" onClick={() => act('revoke')}>
                      Revoke
                    </button>
                  </>
                ) : (
                  <button type="button" onClick={() => act('create')}>
                    Create token
                  </button>
                )}
              </div>
            ) : (
              <p class="hint">Only admins can create, regenerate or revoke the token.</p>
            )}
            {error && (
              <p role="alert" class="state error">
                {error}
              </p>
            )}
          </>
        )}
      </Panel>
    </div>
  );
};
