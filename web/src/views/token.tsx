import { useState } from 'preact/hooks';
import { ApiError, ok, type Api, type Me } from '../api';
import { when } from '../format';
import { Panel, useAsync } from '../ui';

/** 404 means "no valid token": the panel's empty state, not an error. */
const viewOrNull = (api: Api) =>
  ok(api.GET('/backoffice/api-token')).then(
    (r) => r.data,
    (err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    },
  );

/** The plain token, shown once after create / regenerate, with a copy button. */
const Issued = ({ token, onDone }: { token: string; onDone: () => void }) => {
  const [copied, setCopied] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Copy failed: select the token and copy it by hand.');
    }
  };
  return (
    // biome-ignore lint/a11y/useSemanticElements: groups the new token with its heading; a fieldset would mark it as a form
    <div class="issued" role="group" aria-labelledby="issued-title">
      <h3 id="issued-title">Your new API token</h3>
      <p>It is shown only now: store it in your secrets manager before you leave this page.</p>
      <div class="issued-row">
        <label class="visually-hidden" for="issued-token">
          New API token
        </label>
        <input id="issued-token" readOnly value={token} onFocus={(e) => e.currentTarget.select()} data-testid="issued-token" />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p role="status">{copied}</p>
      <button type="button" onClick={onDone}>
        I have stored it
      </button>
    </div>
  );
};

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
            {issued && <Issued token={issued} onDone={() => setIssued(null)} />}
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
