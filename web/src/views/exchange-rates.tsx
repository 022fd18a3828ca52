import { useState } from 'preact/hooks';
import { type Api, ApiError, type ExchangeRates, type Me, ok } from '../api';
import { saveFile, toCsv } from '../csv';
import { CURRENCIES } from '../format';
import { type Column, Field, ListTable, messagesFor, Panel, useAsync } from '../ui';

/**
 * The Settings view's exchange rates (docs/exchange-rates.md): every currency's monthly rates into
 * the reporting currency (GET /exchange-rates), as one table with its CSV. Admins set a month's
 * rate (PUT /exchange-rates/{currency}) and remove one (`rate: null`); users read them.
 */
type RateRow = { currency: string; month: string; rate: string };
const rowsOf = (tables: ExchangeRates[]): RateRow[] => tables.flatMap((t) => t.rates.map((r) => ({ currency: t.currency, ...r })));
const rowKey = (r: { currency: string; month: string }) => `${r.currency} ${r.month}`;
/** Months of each currency listed until the user asks for all (a table may hold 1,560; the CSV has every row). */
export const RECENT_MONTHS = 12;
/** The last `RECENT_MONTHS` months of each currency (its rates come oldest first). */
const recentOf = (tables: ExchangeRates[]): RateRow[] =>
  tables.flatMap((t) => t.rates.slice(-RECENT_MONTHS).map((r) => ({ currency: t.currency, ...r })));

/** The 422's messages by the form's fields; what names none of them goes with the form's own message. */
const FIELDS = { currency: 'currency', month: 'rates.0.month', rate: 'rates.0.rate' } as const;
const otherMessages = (errors: Record<string, string[]>) =>
  Object.entries(errors)
    .filter(([k]) => !Object.values(FIELDS).some((f) => k === f || k.startsWith(`${f}.`)))
    .flatMap(([, m]) => m);

type Outcome = { notice: string; error: string };

/** After a change, when its answer says `Recount-Pending: true` (docs/exchange-rates.md): the figures follow once their recount ends. */
const recountNote = (response: Response) =>
  response.headers.get('recount-pending') === 'true'
    ? ' Recount pending: the figures are being recounted at the new rates in the background; until that ends they stay at the rates before.'
    : '';

/** Currency, month and rate: one month's rate, saved with PUT /exchange-rates/{currency}. */
const RateForm = ({ api, me, onDone }: { api: Api; me: Me; onDone: (o: Outcome) => void }) => {
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [busy, setBusy] = useState(false);
  const ccy = me.reporting_currency;
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const [currency, month, rate] = ['currency', 'month', 'rate'].map((k) => String(form.get(k) ?? '').trim());
    setErrors({});
    if (!currency) {
      setErrors({ currency: ['The currency field is required.'] });
      onDone({ notice: '', error: 'The given data was invalid.' });
      return;
    }
    setBusy(true);
    try {
      const answer = await api.PUT('/exchange-rates/{currency}', {
        params: { path: { currency: currency.toUpperCase() } },
        body: { rates: [{ month, rate }] },
      });
      const { data } = await ok(Promise.resolve(answer));
      const saved = data.rates.find((r) => r.month === month);
      onDone({
        notice: `Saved: ${data.currency} in ${month} at ${saved?.rate ?? rate} ${ccy} per ${data.currency}.${recountNote(answer.response)}`,
        error: '',
      });
    } catch (err) {
      const fields = err instanceof ApiError ? err.errors : {};
      setErrors(fields);
      onDone({ notice: '', error: [(err as Error).message, ...otherMessages(fields)].join(' ') });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="settings-form rate-form" onSubmit={submit} noValidate aria-label="Set an exchange rate">
      <Field
        id="rate-currency"
        name="currency"
        label="Currency"
        type="text"
        maxLength={3}
        list="rate-currencies"
        required
        errors={messagesFor(errors, FIELDS.currency)}
        hint="Its ISO 4217 code, such as USD."
        testId="rate-currency"
      />
      <datalist id="rate-currencies">
        {CURRENCIES.filter((c) => c !== ccy).map((c) => (
          <option key={c} value={c} />
        ))}
      </datalist>
      <Field
        id="rate-month"
        name="month"
        label="Month"
        type="month"
        required
        errors={messagesFor(errors, FIELDS.month)}
        hint="YYYY-MM: an amount that starts or changes in that month converts at its rate."
        testId="rate-month"
      />
      <Field
        id="rate-rate"
        name="rate"
        label={`Rate (${ccy} per one unit)`}
        type="text"
        inputMode="decimal"
        required
        errors={messagesFor(errors, FIELDS.rate)}
        hint={`A decimal above 0, such as 31.52 (${ccy} for one unit of the currency).`}
        testId="rate-rate"
      />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Set rate'}
        </button>
      </div>
    </form>
  );
};

export const ExchangeRatesSection = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/exchange-rates')));
  const [outcome, setOutcome] = useState<Outcome>({ notice: '', error: '' });
  const [removing, setRemoving] = useState('');
  const [all, setAll] = useState(false);
  const admin = me.role === 'admin';
  const ccy = me.reporting_currency;
  const done = (o: Outcome) => {
    setOutcome(o);
    if (o.notice) retry();
  };
  const remove = async (r: RateRow) => {
    setRemoving(rowKey(r));
    setOutcome({ notice: '', error: '' });
    try {
      const answer = await api.PUT('/exchange-rates/{currency}', {
        params: { path: { currency: r.currency } },
        body: { rates: [{ month: r.month, rate: null }] },
      });
      await ok(Promise.resolve(answer));
      done({ notice: `Removed the ${r.currency} rate of ${r.month} (it was ${r.rate}).${recountNote(answer.response)}`, error: '' });
    } catch (err) {
      done({ notice: '', error: (err as Error).message });
    } finally {
      setRemoving('');
    }
  };
  const columns: Column<RateRow>[] = [
    { label: 'Currency', cell: (r) => r.currency },
    { label: 'Month', cell: (r) => r.month },
    { label: `Rate (${ccy} per unit)`, num: true, cell: (r) => r.rate },
  ];
  if (admin)
    columns.push({
      label: 'Remove',
      hideLabel: true,
      cell: (r) => (
        <button type="button" class="secondary" disabled={removing === rowKey(r)} onClick={() => remove(r)} data-testid="rate-remove">
          Remove
          <span class="visually-hidden">
            {' '}
            the {r.currency} rate of {r.month}
          </span>
        </button>
      ),
    });
  return (
    <>
      <Panel id="exchange-rates" title="Exchange rates" wide result={result} retry={retry}>
        {({ data }) => {
          const rows = rowsOf(data);
          const recent = recentOf(data);
          const shown = all ? rows : recent;
          return (
            <>
              <p class="hint" data-testid="rates-effect">
                How many {ccy} one unit of another currency is worth, month by month. A subscription or recurring order in another currency
                counts in the figures at the rate of the month of each change; while that month has no rate its MRR is left out (the
                overview's Unconverted MRR).
              </p>
              {!admin && (
                <p class="hint" data-testid="rates-read-only">
                  Only admins can set or remove exchange rates.
                </p>
              )}
              {rows.length === 0 ? (
                <p class="state empty">No exchange rates yet: every figure counts {ccy} only.</p>
              ) : (
                <>
                  <div class="actions">
                    <button
                      type="button"
                      data-testid="rates-csv"
                      onClick={() =>
                        saveFile(
                          'exchange-rates.csv',
                          toCsv(
                            ['currency', 'month', 'rate'],
                            rows.map((r) => [r.currency, r.month, r.rate]),
                          ),
                        )
                      }
                    >
                      Download CSV
                    </button>
                  </div>
                  {recent.length < rows.length && (
                    <p class="hint" data-testid="rates-count">
                      {all
                        ? `All ${rows.length} rates.`
                        : `The last ${RECENT_MONTHS} months of each currency: ${recent.length} of ${rows.length} rates (the CSV has them all).`}{' '}
                      <button type="button" class="secondary" onClick={() => setAll(!all)} data-testid="rates-all">
                        {all ? `Show the last ${RECENT_MONTHS} months only` : `Show all ${rows.length} rates`}
                      </button>
                    </p>
                  )}
                  <ListTable
                    label="Exchange rates"
                    testId="exchange-rates"
                    columns={columns}
                    items={shown}
                    rowKey={rowKey}
                    rowAttrs={(r) => ({ 'data-currency': r.currency, 'data-month': r.month, 'data-rate': r.rate })}
                  />
                </>
              )}
            </>
          );
        }}
      </Panel>
      {admin && (
        <section class="panel wide" aria-labelledby="rate-form-title" data-panel="rate-form">
          <h2 id="rate-form-title">Set an exchange rate</h2>
          <p class="hint">
            Sets one month's rate, or changes it; the other months keep theirs. The figures are counted again at the new rate before the
            answer.
          </p>
          <RateForm api={api} me={me} onDone={done} />
          {outcome.error && (
            <p role="alert" class="state error" data-testid="rate-error">
              {outcome.error}
            </p>
          )}
          <p class="notice" role="status" data-testid="rate-notice">
            {outcome.notice}
          </p>
        </section>
      )}
    </>
  );
};
