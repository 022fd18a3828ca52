import { useEffect, useState } from 'preact/hooks';
import { type Api, ApiError, type Delivery, type Endpoint, type EndpointInput, type Me, ok, type WebhookEventType } from '../api';
import { prettyJson, when, whenExact } from '../format';
import { Badge, type Column, Field, ListPanel, ListTable, messagesFor, Panel, ShownOnce, useAsync } from '../ui';

/**
 * Webhooks: the merchant's endpoints and, for the one selected, its delivery log. Admins add, edit,
 * enable or disable, rotate the secret of and delete endpoints, send a test event and send a logged
 * event again; a signing secret is shown once, as the API answers it. Users only read.
 */
type EventType = Exclude<WebhookEventType, '*'>;
/** Every event type an endpoint can receive, with its name on the page (the type keeps the list whole). */
const EVENT_TYPES: Record<EventType, string> = {
  'order.created': 'Order created',
  'order.paid': 'Order paid',
  'order.failed': 'Order failed',
  'order.refunded': 'Order refunded',
  'order.cancelled': 'Order cancelled',
  'subscription.created': 'Subscription created',
  'subscription.updated': 'Subscription updated',
  'subscription.paused': 'Subscription paused',
  'subscription.reactivated': 'Subscription reactivated',
  'subscription.cancelled': 'Subscription cancelled',
  'subscription.trial_converted': 'Trial converted',
  'subscription.trial_cancelled': 'Trial cancelled',
  'subscription.past_due': 'Subscription past due',
  'subscription.recovered': 'Subscription recovered',
};
const ALL = '*';
const eventsText = (events: string[]) => (events.includes(ALL) ? 'All events' : events.join(', '));
const failed = (err: unknown) => (err as Error).message;

/** A button whose accessible name also names the endpoint or delivery it acts on. */
const RowButton = (props: { label: string; of: string; onClick: () => void; danger?: boolean; pressed?: boolean; testId?: string }) => (
  <button
    type="button"
    class={props.danger ? 'danger' : undefined}
    onClick={props.onClick}
    aria-pressed={props.pressed}
    data-testid={props.testId}
  >
    {props.label}
    <span class="visually-hidden"> {props.of}</span>
  </button>
);

type Editing = { mode: 'create' } | { mode: 'edit'; endpoint: Endpoint };

/**
 * Adds an endpoint or changes one: URL, event types (or all of them), description. An edit sends
 * only what changed (a changed URL is checked again by the API). The API's 422 messages are shown
 * by their fields.
 */
const EndpointForm = (props: {
  api: Api;
  editing: Editing;
  onSaved: (saved: Endpoint & { secret?: string }) => void;
  onCancel: () => void;
}) => {
  const current = props.editing.mode === 'edit' ? props.editing.endpoint : null;
  const [all, setAll] = useState(current?.events.includes(ALL) ?? false);
  const [errors, setErrors] = useState<Record<string, string[]>>({});
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => document.getElementById('endpoint-form-title')?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const url = String(form.get('url') ?? '').trim();
    const events = (all ? [ALL] : form.getAll('events').map(String)) as EndpointInput['events'];
    const description = String(form.get('description') ?? '').trim() || null;
    setBusy(true);
    setErrors({});
    setMessage('');
    try {
      if (!current) {
        const { data } = await ok(props.api.POST('/webhook-endpoints', { body: { url, events, description } }));
        props.onSaved(data);
      } else {
        const same = (a: string[], b: string[]) => [...a].sort().join() === [...b].sort().join();
        const changes = {
          ...(url !== current.url ? { url } : {}),
          ...(same(events, current.events) ? {} : { events }),
          ...(description !== current.description ? { description } : {}),
        };
        const { data } = await ok(props.api.PATCH('/webhook-endpoints/{id}', { params: { path: { id: current.id } }, body: changes }));
        props.onSaved(data);
      }
    } catch (err) {
      setErrors(err instanceof ApiError ? err.errors : {});
      setMessage(failed(err));
    } finally {
      setBusy(false);
    }
  };
  const title = current ? `Edit ${current.url}` : 'Add a webhook endpoint';
  const eventErrors = messagesFor(errors, 'events');
  return (
    <section class="panel wide" aria-labelledby="endpoint-form-title" data-panel="endpoint-form">
      <h2 id="endpoint-form-title" tabIndex={-1}>
        {title}
      </h2>
      <form class="endpoint-form" onSubmit={submit} noValidate>
        <Field
          id="endpoint-url"
          name="url"
          maxLength={2048}
          label="URL"
          type="url"
          value={current?.url ?? ''}
          required
          errors={messagesFor(errors, 'url')}
          hint="https, on a public address. Deliveries are signed POSTs."
        />
        <fieldset aria-describedby={eventErrors.length ? 'endpoint-events-error' : undefined}>
          <legend>Event types</legend>
          <label class="check">
            <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} data-testid="events-all" />
            All event types, present and future
          </label>
          <div class="checks">
            {Object.entries(EVENT_TYPES).map(([type, name]) => (
              <label class="check" key={type}>
                <input
                  type="checkbox"
                  name="events"
                  value={type}
                  disabled={all}
                  defaultChecked={current ? current.events.includes(type) : false}
                />
                {name} <code>{type}</code>
              </label>
            ))}
          </div>
          {eventErrors.length > 0 && (
            <p id="endpoint-events-error" class="field-error">
              {eventErrors.join(' ')}
            </p>
          )}
        </fieldset>
        <Field
          id="endpoint-description"
          name="description"
          maxLength={255}
          label="Description (optional)"
          type="text"
          value={current?.description ?? ''}
          errors={messagesFor(errors, 'description')}
        />
        {message && (
          <p role="alert" class="state error" data-testid="endpoint-form-error">
            {message}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : current ? 'Save changes' : 'Create endpoint'}
          </button>
          <button type="button" class="secondary" onClick={props.onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
};

/** What a delivery row's buttons and disclosures name for screen readers. */
const deliveryName = (d: Delivery) => `${d.event_type} ${d.event_id} attempt ${d.attempt}`;

/**
 * The body an attempt sent, as the log keeps it, behind a disclosure: indented, each token as sent
 * (`prettyJson`). A body the log kept only the start of says so (and is indented as far as it goes).
 */
const Payload = ({ d }: { d: Delivery }) =>
  d.payload === null ? (
    '—'
  ) : (
    <details class="payload" data-testid="payload">
      <summary>
        {d.payload_truncated ? 'Show (truncated)' : 'Show'}
        <span class="visually-hidden"> payload of {deliveryName(d)}</span>
      </summary>
      {d.payload_truncated && (
        <p class="hint" data-testid="payload-truncated">
          The log keeps only the start of this body; the receiver got all of it.
        </p>
      )}
      <pre>{prettyJson(d.payload)}</pre>
    </details>
  );

const DeliveriesPanel = ({ api, me, endpoint }: { api: Api; me: Me; endpoint: Endpoint }) => {
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ endpoint: endpoint.id, page }, (p) =>
    ok(api.GET('/webhook-endpoints/{id}/deliveries', { params: { path: { id: p.endpoint }, query: { page: p.page, per_page: 10 } } })),
  );
  const [sending, setSending] = useState(false);
  const [notice, setNotice] = useState('');
  const outcome = (d: Delivery) =>
    d.status !== null && d.status < 300 ? `delivered (HTTP ${d.status})` : `answered ${d.status ?? d.error}`;
  /** Sends a test event, or a logged event again, and shows the new attempt at the top of the log. */
  const send = async (what: { test: true } | { again: Delivery }) => {
    setSending(true);
    setNotice('');
    try {
      const path = { id: endpoint.id };
      const { data } =
        'test' in what
          ? await ok(api.POST('/webhook-endpoints/{id}/test', { params: { path } }))
          : await ok(
              api.POST('/webhook-endpoints/{id}/deliveries/{event_id}/retry', {
                params: { path: { ...path, event_id: what.again.event_id } },
              }),
            );
      setNotice(
        'test' in what ? `Test event ${outcome(data)}.` : `${data.event_type} sent again as attempt ${data.attempt}: ${outcome(data)}.`,
      );
      setPage(1);
      retry();
    } catch (err) {
      setNotice(`Could not send: ${failed(err)}`);
    } finally {
      setSending(false);
    }
  };
  const admin = me.role === 'admin';
  const columns: Column<Delivery>[] = [
    { label: 'When', cell: (d) => when(d.at) },
    {
      label: 'Event',
      cell: (d) => (
        <>
          {d.event_type} <code class="muted">{d.event_id}</code>
        </>
      ),
    },
    { label: 'Attempt', num: true, cell: (d) => d.attempt },
    {
      label: 'Result',
      cell: (d) => <Badge status={String(d.status ?? d.error)} tone={d.status !== null && d.status < 300 ? 'good' : 'bad'} />,
    },
    { label: 'Duration', num: true, cell: (d) => `${d.duration_ms} ms` },
    {
      label: 'Next retry',
      cell: (d) => (d.next_attempt_at ? <time dateTime={d.next_attempt_at}>{whenExact(d.next_attempt_at)}</time> : '—'),
    },
    ...(admin
      ? [
          {
            label: 'Send again',
            hideLabel: true,
            cell: (d: Delivery) => <RowButton label="Send again" of={deliveryName(d)} onClick={() => send({ again: d })} />,
          },
        ]
      : []),
    // Last: opened, it widens its column without pushing the row's button out of view.
    { label: 'Payload', cell: (d) => <Payload d={d} /> },
  ];
  return (
    <ListPanel
      id="deliveries"
      title={`Deliveries to ${endpoint.url}`}
      result={result}
      retry={retry}
      empty="No deliveries in the last 30 days."
      actions={
        <div class="controls">
          <p class="notice" role="status" data-testid="test-notice">
            {notice}
          </p>
          {admin && (
            <button type="button" onClick={() => send({ test: true })} disabled={sending} data-testid="send-test">
              {sending ? 'Sending…' : 'Send test event'}
            </button>
          )}
        </div>
      }
      above={() => (
        <p class="hint">
          Each attempt of the last 30 days. A failed delivery is tried again automatically for about a day (after 10 s, 1 min, 5 min, 30
          min, 2 h, 5 h, 10 h and 10 h); <em>Next retry</em> is when the attempt after it is due (UTC), — when none is: delivered, out of
          attempts, or a test. <em>Payload</em> shows the body sent.
        </p>
      )}
      table={{
        label: 'Deliveries',
        testId: 'deliveries',
        columns,
        onPage: setPage,
        rowKey: (d) => `${d.event_id}-${d.attempt}`,
        rowAttrs: (d) => ({ 'data-event-id': d.event_id, 'data-attempt': String(d.attempt) }),
      }}
    />
  );
};

type Secret = { url: string; value: string; rotated: boolean };

export const Webhooks = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/webhook-endpoints', { params: { query: { per_page: 100 } } })));
  const [selected, setSelected] = useState<number | null>(null);
  const [editing, setEditing] = useState<Editing | null>(null);
  const [secret, setSecret] = useState<Secret | null>(null);
  const [notice, setNotice] = useState('');
  const endpoints = result.state === 'ready' ? result.data.data : [];
  const current = endpoints.find((e) => e.id === selected) ?? endpoints[0];
  const admin = me.role === 'admin';
  useEffect(() => {
    if (secret) document.getElementById('issued-secret')?.focus();
  }, [secret]);

  const saved = (e: Endpoint & { secret?: string }) => {
    const created = editing?.mode === 'create';
    setEditing(null);
    setSelected(e.id);
    if (e.secret) setSecret({ url: e.url, value: e.secret, rotated: false });
    setNotice(created ? `Endpoint ${e.url} added.` : `Endpoint ${e.url} saved.`);
    retry();
  };
  const act = async (what: 'toggle' | 'rotate' | 'delete', e: Endpoint) => {
    const question = {
      toggle: null,
      rotate: `Rotate the signing secret of ${e.url}? The new secret is shown once; the current one keeps signing beside it for 24 hours.`,
      delete: `Delete the endpoint ${e.url}? Deliveries to it stop, and this cannot be undone.`,
    }[what];
    if (question && !confirm(question)) return;
    setNotice('');
    const path = { id: e.id };
    try {
      if (what === 'toggle') {
        const status = e.status === 'enabled' ? 'disabled' : 'enabled';
        await ok(api.PATCH('/webhook-endpoints/{id}', { params: { path }, body: { status } }));
        setNotice(`Endpoint ${e.url} ${status}.`);
      } else if (what === 'rotate') {
        const { data } = await ok(api.POST('/webhook-endpoints/{id}/rotate-secret', { params: { path } }));
        setSecret({ url: e.url, value: data.secret, rotated: true });
        setNotice(`New signing secret issued for ${e.url}.`);
      } else {
        await ok(api.DELETE('/webhook-endpoints/{id}', { params: { path } }));
        if (editing?.mode === 'edit' && editing.endpoint.id === e.id) setEditing(null);
        setNotice(`Endpoint ${e.url} deleted.`);
      }
      retry();
    } catch (err) {
      setNotice(`Could not ${what === 'toggle' ? 'change' : what} ${e.url}: ${failed(err)}`);
    }
  };

  const columns: Column<Endpoint>[] = [
    { label: 'URL', cell: (e) => <span class="url">{e.url}</span> },
    { label: 'Events', cell: (e) => eventsText(e.events) },
    { label: 'Description', cell: (e) => e.description ?? '—' },
    { label: 'Status', cell: (e) => <Badge status={e.status} tone={e.status === 'enabled' ? 'good' : 'off'} /> },
    {
      label: 'Actions',
      hideLabel: true,
      cell: (e) => (
        <div class="row-actions">
          <RowButton label="Deliveries" of={`of ${e.url}`} pressed={e.id === current?.id} onClick={() => setSelected(e.id)} />
          {admin && (
            <>
              <RowButton label="Edit" of={e.url} onClick={() => setEditing({ mode: 'edit', endpoint: e })} />
              <RowButton label={e.status === 'enabled' ? 'Disable' : 'Enable'} of={e.url} onClick={() => act('toggle', e)} />
              <RowButton label="Rotate secret" of={`of ${e.url}`} onClick={() => act('rotate', e)} />
              <RowButton label="Delete" of={e.url} danger onClick={() => act('delete', e)} />
            </>
          )}
        </div>
      ),
    },
  ];

  return (
    <div class="grid">
      {secret && (
        <div class="panel wide">
          <ShownOnce
            title={secret.rotated ? `New signing secret for ${secret.url}` : `Signing secret for ${secret.url}`}
            note={`Copy it now: it is shown only this once, and the API never shows it again. Your receiver verifies deliveries with it${secret.rotated ? '; the previous secret keeps signing beside it for 24 hours' : ''}.`}
            label="Signing secret"
            value={secret.value}
            testId="issued-secret"
            level={2}
            onDone={() => setSecret(null)}
          />
        </div>
      )}
      <Panel
        id="endpoints"
        title="Webhook endpoints"
        wide
        result={result}
        retry={retry}
        isEmpty={(p) => p.data.length === 0}
        empty={admin ? 'No webhook endpoints yet. Add one to receive signed events.' : 'No webhook endpoints. An admin can add one.'}
        actions={
          <div class="controls">
            <p class="notice" role="status" data-testid="endpoints-notice">
              {notice}
            </p>
            {admin && (
              <button type="button" onClick={() => setEditing({ mode: 'create' })} data-testid="add-endpoint">
                Add endpoint
              </button>
            )}
          </div>
        }
      >
        {(p) => (
          <>
            <ListTable
              label="Webhook endpoints"
              testId="endpoints"
              columns={columns}
              items={p.data}
              rowKey={(e) => e.id}
              rowAttrs={(e) => ({ 'data-endpoint-id': String(e.id), 'aria-current': e.id === current?.id ? 'true' : undefined })}
            />
            {!admin && <p class="hint">Only admins can add, change or delete endpoints.</p>}
          </>
        )}
      </Panel>
      {editing && (
        <EndpointForm
          key={editing.mode === 'edit' ? editing.endpoint.id : 'new'}
          api={api}
          editing={editing}
          onSaved={saved}
          onCancel={() => setEditing(null)}
        />
      )}
      {current && <DeliveriesPanel key={current.id} api={api} me={me} endpoint={current} />}
    </div>
  );
};
