import { useState } from 'preact/hooks';
import { type Api, ApiError, type Me, ok } from '../api';
import { when } from '../format';
import { Panel, useAsync } from '../ui';
import { ExchangeRatesSection } from './exchange-rates';

/**
 * The merchant's settings (docs/settings.md): the reporting time zone and currency, and the exchange
 * rates into that currency (./exchange-rates.tsx). Admins change the zone and the rates; users read
 * them. After a save of the zone the session (`me`) carries it, so the other views use it without
 * a reload.
 */
const ZONE_EFFECT =
  'Today and this month in the order stats, and every day, week and month of the metrics, start at midnight in this zone.';

/**
 * What a pending recount means for the figures (`recount.status` pending, or `Recount-Pending: true`;
 * docs/settings.md, "Recounts"): every figure stays that of the settings before the change, whole.
 */
const RECOUNTING =
  'the figures are being recounted in the background for the last change of time zone or exchange rates: until the recount ends, every figure stays that of the settings before the change.';

/** Whether an answer of the settings says a recount runs: its `recount`, or its `Recount-Pending` header. */
const recountPending = (response: Response, data: { recount?: { status: string } }) =>
  data.recount?.status === 'pending' || response.headers.get('recount-pending') === 'true';

/** The IANA names the browser knows, with UTC (which some browsers leave out of the list). */
const zoneNames = () => {
  const names = Intl.supportedValuesOf('timeZone');
  return names.includes('UTC') ? names : ['UTC', ...names];
};

/** The zone as a searchable field (the browser's suggestions, any name typed), saved with PUT /settings. */
const ZoneForm = ({ api, me, onSaved }: { api: Api; me: Me; onSaved: (timezone: string) => void }) => {
  const [state, setState] = useState<{ busy: boolean; error: string; notice: string }>({ busy: false, error: '', notice: '' });
  const submit = async (e: Event) => {
    e.preventDefault();
    const timezone = String(new FormData(e.currentTarget as HTMLFormElement).get('timezone') ?? '').trim();
    setState({ busy: true, error: '', notice: '' });
    try {
      const answer = await api.PUT('/settings', { body: { timezone } });
      const { data } = await ok(Promise.resolve(answer));
      const later = recountPending(answer.response, data) ? ` Recount pending: ${RECOUNTING}` : '';
      setState({ busy: false, error: '', notice: `Saved: the reporting time zone is now ${data.timezone}.${later}` });
      onSaved(data.timezone);
    } catch (err) {
      // A 422 names what is wrong with the field; anything else says what failed.
      const field = err instanceof ApiError ? err.errors.timezone : undefined;
      setState({ busy: false, error: field?.join(' ') ?? (err as Error).message, notice: '' });
    }
  };
  return (
    <form class="settings-form" onSubmit={submit} noValidate>
      <div class="field">
        <label for="settings-timezone">Reporting time zone</label>
        <input
          id="settings-timezone"
          name="timezone"
          type="text"
          list="settings-zones"
          defaultValue={me.timezone}
          required
          autoComplete="off"
          spellcheck={false}
          aria-invalid={state.error !== ''}
          aria-describedby={state.error ? 'settings-timezone-hint settings-error' : 'settings-timezone-hint'}
          data-testid="settings-timezone-input"
        />
        <datalist id="settings-zones">
          {zoneNames().map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
        <p id="settings-timezone-hint" class="hint">
          An IANA name: type to search (UTC, Asia/Taipei, America/New_York…).
        </p>
      </div>
      {state.error && (
        <p id="settings-error" role="alert" class="state error" data-testid="settings-error">
          {state.error}
        </p>
      )}
      <div class="actions">
        <button type="submit" disabled={state.busy}>
          {state.busy ? 'Saving…' : 'Save'}
        </button>
      </div>
      <p class="notice" role="status" data-testid="settings-notice">
        {state.notice}
      </p>
    </form>
  );
};

export const SettingsView = ({ api, me, setMe }: { api: Api; me: Me; setMe: (me: Me) => void }) => {
  const [result, retry] = useAsync(null, async () => {
    const answer = await api.GET('/settings');
    const read = await ok(Promise.resolve(answer));
    return { ...read, pending: recountPending(answer.response, read.data) };
  });
  const admin = me.role === 'admin';
  return (
    <div class="grid">
      <Panel id="settings" title="Reporting" wide result={result} retry={retry}>
        {({ data, pending }) => (
          <>
            {pending && (
              <p
                class="state"
                role="status"
                data-testid="settings-recount-pending"
                data-requested-at={data.recount.requested_at ?? undefined}
              >
                <strong>Recount pending</strong>
                {data.recount.requested_at ? ` (changed ${when(data.recount.requested_at)})` : ''}: {RECOUNTING}
              </p>
            )}
            <dl class="settings" data-testid="settings-view" data-timezone={data.timezone}>
              <dt>Time zone</dt>
              <dd data-testid="settings-timezone">{data.timezone}</dd>
              <dt>Currency</dt>
              <dd data-testid="settings-currency">{data.reporting_currency}</dd>
            </dl>
            <p class="hint settings-effect">{ZONE_EFFECT}</p>
            <p class="hint">The reporting currency is set when the account is created and does not change.</p>
            {!admin && (
              <p class="hint" data-testid="settings-read-only">
                Only admins can change the time zone.
              </p>
            )}
          </>
        )}
      </Panel>
      {admin && (
        // Apart from the panel above, which loads again after a save: the form and its notice stay.
        <section class="panel wide" aria-labelledby="zone-form-title" data-panel="zone-form">
          <h2 id="zone-form-title">Change the time zone</h2>
          <ZoneForm
            api={api}
            me={me}
            onSaved={(timezone) => {
              setMe({ ...me, timezone });
              retry();
            }}
          />
        </section>
      )}
      <ExchangeRatesSection api={api} me={me} />
    </div>
  );
};
