import { useState } from 'preact/hooks';
import { type ApiError, ok, type Api, type Endpoint, type Me } from '../api';
import { when } from '../format';
import { Head, PagedTable, Panel, TableScroll, useAsync } from '../ui';

const DeliveriesPanel = ({ api, me, endpoint }: { api: Api; me: Me; endpoint: Endpoint }) => {
  const [page, setPage] = useState(1);
  const [result, retry] = useAsync({ endpoint: endpoint.id, page }, (p) =>
    ok(api.GET('/webhook-endpoints/{id}/deliveries', { params: { path: { id: p.endpoint }, query: { page: p.page, per_page: 10 } } })),
  );
  const [sending, setSending] = useState(false);
  const [notice, setNotice] = useState('');
  const sendTest = async () => {
    setSending(true);
    setNotice('');
    try {
      const { data } = await ok(api.POST('/webhook-endpoints/{id}/test', { params: { path: { id: endpoint.id } } }));
      setNotice(
        data.status !== null && data.status < 300
          ? `Test event delivered (HTTP ${data.status}).`
          : `Test event sent; the endpoint answered ${data.status ?? data.error}.`,
      );
      setPage(1);
      retry();
    } catch (err) {
      setNotice(`Could not send the test event: ${(err as ApiError).message}`);
    } finally {
      setSending(false);
    }
  };
  return (
    <Panel
      id="deliveries"
      title={`Deliveries to ${endpoint.url}`}
      wide
      result={result}
      retry={retry}
      isEmpty={(p) => p.meta.total === 0}
      empty="No deliveries in the last 30 days."
      actions={
        me.role === 'admin' ? (
          <div class="controls">
            <p class="notice" role="status" data-testid="test-notice">
              {notice}
            </p>
            <button type="button" onClick={sendTest} disabled={sending} data-testid="send-test">
              {sending ? 'Sending…' : 'Send test event'}
            </button>
          </div>
        ) : null
      }
    >
      {(p) => (
        <PagedTable
          label="Deliveries"
          testId="deliveries"
          cols={['When', 'Event', 'Attempt', 'Result', 'Duration']}
          page={p}
          onPage={setPage}
          row={(d) => (
            <tr key={`${d.event_id}-${d.attempt}`} data-event-id={d.event_id}>
              <th scope="row">{when(d.at)}</th>
              <td>{d.event_type}</td>
              <td class="num">{d.attempt}</td>
              <td>
                <span class={`badge ${d.status !== null && d.status < 300 ? 'paid' : 'failed'}`}>{d.status ?? d.error}</span>
              </td>
              <td class="num">{d.duration_ms} ms</td>
            </tr>
          )}
        />
      )}
    </Panel>
  );
};

export const Webhooks = ({ api, me }: { api: Api; me: Me }) => {
  const [result, retry] = useAsync(null, () => ok(api.GET('/webhook-endpoints', { params: { query: { per_page: 100 } } })));
  const [selected, setSelected] = useState<number | null>(null);
  const endpoints = result.state === 'ready' ? result.data.data : [];
  const current = endpoints.find((e) => e.id === selected) ?? endpoints[0];
  return (
    <div class="grid">
      <Panel
        id="endpoints"
        title="Webhook endpoints"
        wide
        result={result}
        retry={retry}
        isEmpty={(p) => p.data.length === 0}
        empty="No webhook endpoints. Register one with POST /v1/webhook-endpoints."
      >
        {(p) => (
          <TableScroll label="Webhook endpoints">
            <table data-testid="endpoints">
              <Head cols={['URL', 'Events', 'Status', <span class="visually-hidden">Deliveries</span>]} />
              <tbody>
                {p.data.map((e) => (
                  <tr key={e.id} aria-current={e.id === current?.id ? 'true' : undefined}>
                    <th scope="row" class="url">
                      {e.url}
                    </th>
                    <td>{e.events.join(', ')}</td>
                    <td>
                      <span class={`badge ${e.status === 'enabled' ? 'paid' : 'cancelled'}`}>{e.status}</span>
                    </td>
                    <td>
                      <button type="button" onClick={() => setSelected(e.id)} aria-pressed={e.id === current?.id}>
                        Deliveries
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
        )}
      </Panel>
      {current && <DeliveriesPanel key={current.id} api={api} me={me} endpoint={current} />}
    </div>
  );
};
