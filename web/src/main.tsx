import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { createApi, loadConfig, ok, type Api, type Me } from './api';
import { signOut, type DashboardConfig } from './auth';
import { Activity } from './views/activity';
import { Customers } from './views/customers';
import { Imports } from './views/imports';
import { Overview } from './views/overview';
import { Sales } from './views/sales';
import { SettingsView } from './views/settings';
import { Subscriptions } from './views/subscriptions';
import { TokenView } from './views/token';
import { Webhooks } from './views/webhooks';
import './styles.css';

const VIEWS = [
  { id: 'overview', label: 'Overview', View: Overview },
  { id: 'sales', label: 'Sales', View: Sales },
  { id: 'customers', label: 'Customers', View: Customers },
  { id: 'subscriptions', label: 'Subscriptions', View: Subscriptions },
  { id: 'activity', label: 'Orders & events', View: Activity },
  { id: 'imports', label: 'Imports', View: Imports },
  { id: 'webhooks', label: 'Webhooks', View: Webhooks },
  { id: 'token', label: 'API token', View: TokenView },
  { id: 'settings', label: 'Settings', View: SettingsView },
] as const;
type ViewId = (typeof VIEWS)[number]['id'];
type Route = { view: ViewId; arg?: string };

/** `#<view>`, or `#customers/<id>` for one customer; anything else is the overview. */
const routeFromHash = (): Route => {
  const [, id, arg] = /^#([a-z]+)(?:\/(\d+))?$/.exec(location.hash) ?? [];
  const view = VIEWS.find((v) => v.id === id)?.id;
  if (!view || (arg && view !== 'customers')) return { view: 'overview' };
  return arg ? { view, arg } : { view };
};

/** `setMe`: the signed-in session changed (the settings view saved a new time zone), for every view from now on. */
const Dashboard = ({ config, api, me, setMe }: { config: DashboardConfig; api: Api; me: Me; setMe: (me: Me) => void }) => {
  const [{ view, arg }, setRoute] = useState<Route>(routeFromHash);
  useEffect(() => {
    const onHash = () => setRoute(routeFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const { View, label } = VIEWS.find((v) => v.id === view)!;
  // A customer's page is titled by its name (else email) once loaded: the page tells it (`onName`).
  const [named, setNamed] = useState<{ arg: string; name: string } | null>(null);
  const title = arg ? (named?.arg === arg ? named.name : 'Customer') : label;
  // On a view change (not the first load, which starts at the skip link) focus moves to its heading.
  const firstView = useRef(true);
  useEffect(() => {
    if (firstView.current) firstView.current = false;
    else document.getElementById('view-title')?.focus();
  }, [view, arg]);
  useEffect(() => {
    document.title = `${title} · ${me.name} · Revenue dashboard`;
  }, [title, me.name]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <strong>Revenue dashboard</strong>
          <span class="who" data-testid="who">
            {me.name} · <span class={`role ${me.role}`}>{me.role}</span>
          </span>
        </div>
        <nav aria-label="Views">
          {VIEWS.map((v) => (
            <a key={v.id} href={`#${v.id}`} aria-current={v.id === view ? 'page' : undefined}>
              {v.label}
            </a>
          ))}
        </nav>
        <button type="button" class="link" onClick={() => signOut(config)}>
          Sign out
        </button>
      </header>
      <main id="main" data-view={view} data-arg={arg}>
        <h1 id="view-title" tabIndex={-1}>
          {title}
        </h1>
        <View api={api} me={me} arg={arg} setMe={setMe} onName={(name: string) => arg && setNamed({ arg, name })} />
      </main>
    </>
  );
};

const App = () => {
  const [ready, setReady] = useState<{ config: DashboardConfig; api: Api; me: Me } | { error: string } | null>(null);
  useEffect(() => {
    (async () => {
      const config = await loadConfig();
      const api = createApi(config);
      const { data: me } = await ok(api.GET('/backoffice/me'));
      setReady({ config, api, me });
    })().catch((err: Error) => setReady({ error: err.message }));
  }, []);
  if (!ready)
    return (
      <p class="boot" aria-busy="true">
        Signing in…
      </p>
    );
  if ('error' in ready)
    return (
      <main id="main" class="boot">
        <h1>The dashboard could not start</h1>
        <p role="alert">{ready.error}</p>
        <button type="button" onClick={() => location.reload()}>
          Try again
        </button>
      </main>
    );
  return <Dashboard {...ready} setMe={(me) => setReady({ ...ready, me })} />;
};

render(<App />, document.getElementById('app')!);
