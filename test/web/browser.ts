/// <reference lib="dom" />
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { buildDashboard } from '../../infra/local/dashboard.ts';
import { useApi } from '../support/api.ts';
import { backofficeJwt } from '../backoffice/support.ts';

/**
 * The dashboard end-to-end harness: the production bundle built with Vite into a folder of the test
 * file's own, served by the local server next to the real API over DynamoDB Local, in Debian's
 * headless Chromium. Screenshots and axe reports go to test/artifacts/dashboard/.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = resolve('test/artifacts/dashboard');
export const hasChromium = existsSync(CHROMIUM);

export type Viewport = { width: number; height: number };
export const DESKTOP: Viewport = { width: 1280, height: 900 };
export const PHONE: Viewport = { width: 390, height: 844 };

/** The digits (and sign) of a figure as shown, against those of the API's exact decimal. */
export const digits = (text: string) => (text.includes('-') || text.includes('−') ? '-' : '') + text.replace(/[^0-9]/g, '');
export const today = () => new Date().toISOString().slice(0, 10);

/**
 * For one test file: builds the bundle into test/artifacts/<distName> (files running at once never
 * share a build), starts the API with the dashboard and, when Chromium is there, the browser.
 */
export const useDashboard = (test: string, distName: string) => {
  if (!hasChromium) console.warn(`${test} skipped: no Chromium at ${CHROMIUM} (.ci/run installs it: apt-get install -y chromium)`);
  const dist = resolve('test/artifacts', distName);
  let session = '';
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const bundle = { gzipBytes: 0, buildMs: 0 };
  beforeAll(async () => {
    bundle.buildMs = (await buildDashboard({ outDir: dist, force: true })).ms;
    const files = readdirSync(join(dist, 'assets')).map((f) => join(dist, 'assets', f));
    bundle.gzipBytes = [join(dist, 'index.html'), ...files].reduce((sum, f) => sum + gzipSync(readFileSync(f), { level: 9 }).length, 0);
    mkdirSync(ARTIFACTS, { recursive: true });
    if (hasChromium)
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
  }, 120_000);
  const api = useApi({ dashboard: { root: dist, session: async () => session } });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
  });
  const origin = () => api.base.replace(/\/v1$/, '');

  /** A fresh browser (own sessionStorage) at a viewport, signed in as whatever `/dev/session` hands out. */
  const newPage = async (viewport: Viewport = DESKTOP) => {
    const context = await browser.newContext({ viewport, permissions: ['clipboard-read', 'clipboard-write'] });
    contexts.push(context);
    const page = await context.newPage();
    const failures: string[] = [];
    page.on('pageerror', (err) => failures.push(err.message));
    return { page, failures };
  };
  /** A fresh browser signed in as `role` of the merchant, at a view (`#…`). */
  const open = async (merchantId: string, role: 'admin' | 'user', viewport: Viewport = DESKTOP, hash = '') => {
    session = await backofficeJwt(merchantId, role);
    const opened = await newPage(viewport);
    await opened.page.goto(`${origin()}/${hash}`);
    await opened.page.getByTestId('who').waitFor();
    return opened;
  };
  return {
    api,
    bundle,
    origin,
    open,
    newPage,
    setSession: (value: string) => {
      session = value;
    },
  };
};

export const ready = (page: Page, panel: string) =>
  page.locator(`[data-panel="${panel}"][data-state="ready"]`).waitFor({ timeout: 20_000 });

/**
 * A figure as shown: its API value (`data-value`) and its text. A large amount written short
 * (`NT$1.53M`) gives its exact text (the title and the screen readers' text) as `shown`, and the
 * short form as `short`.
 */
export const figure = async (page: Page, id: string) => {
  const el = page.locator(`[data-figure="${id}"]`);
  const value = el.locator('dd.value');
  const exact = await value.getAttribute('data-exact');
  return {
    raw: await el.getAttribute('data-value'),
    shown: exact ?? (await value.textContent()) ?? '',
    short: exact === null ? null : await value.locator('[aria-hidden="true"]').textContent(),
    title: await value.getAttribute('title'),
  };
};

/**
 * The figures in a part of the page (`scope`, a selector) with their definitions as the page holds
 * them: the label, the ⓘ button's `aria-expanded`, the text of the popover its `aria-controls`
 * names, whether that popover is visible, and whether the definition shows in the card while
 * closed (a `dd` other than the value, change and trend line, or the definition in the card's
 * rendered text, which leaves out what is hidden).
 */
export const figureDefinitions = (page: Page, scope: string) =>
  page.locator(`${scope} [data-figure]`).evaluateAll((els) =>
    (els as HTMLElement[]).map((el) => {
      const button = el.querySelector('button.info');
      const controls = button?.getAttribute('aria-controls') ?? '';
      const pop = controls ? document.getElementById(controls) : null;
      const definition = pop?.textContent?.trim() ?? '';
      return {
        id: el.dataset.figure ?? '',
        label: el.querySelector('dt .label')?.textContent ?? '',
        expanded: button?.getAttribute('aria-expanded') ?? null,
        controls,
        definition,
        visible: pop?.checkVisibility() ?? false,
        underNumber:
          el.querySelector('dd:not(.value, .change, .trend)') !== null ||
          // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, which leaves out what is hidden, is the point
          (definition !== '' && el.innerText.includes(definition)),
      };
    }),
  );

/** A figure's definition: the text of the popover its ⓘ button controls. */
export const definitionOf = async (page: Page, id: string) => {
  const controls = await page.locator(`[data-figure="${id}"] button.info`).getAttribute('aria-controls');
  return ((await page.locator(`[id="${controls}"]`).textContent()) ?? '').trim();
};

/**
 * Every figure in `scope` shows its label and number only: its definition (more than a few words)
 * is behind its ⓘ button, closed and hidden, not under the number. Each opens on a click (the
 * popover shown, with that text) and closes with Escape, focus staying on the button. Gives the
 * figures (figureDefinitions).
 */
export const expectDefinitionsOnDemand = async (page: Page, scope: string) => {
  const figures = await figureDefinitions(page, scope);
  expect(figures.length, `figures in ${scope}`).toBeGreaterThan(0);
  for (const f of figures) {
    expect(
      {
        label: f.label.length > 0,
        expanded: f.expanded,
        defined: f.definition.length > 10,
        visible: f.visible,
        underNumber: f.underNumber,
      },
      `${f.id}: its definition on demand, not under the number`,
    ).toEqual({ label: true, expanded: 'false', defined: true, visible: false, underNumber: false });
    const button = page.locator(`${scope} [data-figure="${f.id}"] button.info`);
    const pop = page.locator(`[id="${f.controls}"]`);
    await button.click();
    await expect.poll(() => button.getAttribute('aria-expanded'), { message: f.id }).toBe('true');
    expect(await pop.isVisible(), `${f.id} open`).toBe(true);
    expect((await pop.textContent())?.trim(), f.id).toBe(f.definition);
    await page.keyboard.press('Escape');
    await expect.poll(() => button.getAttribute('aria-expanded'), { message: f.id }).toBe('false');
    expect(await pop.isVisible(), `${f.id} closed`).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-controls')), `${f.id}: focus on its button`).toBe(
      f.controls,
    );
  }
  return figures;
};

/** The number a short form stands for (`NT$18.36M` → 18360000), to the precision it shows. */
export const shortNumber = (text: string) => {
  const [, num, unit] = /([\d.,]+)\s*([KMBT])/.exec(text) ?? [];
  if (!num) throw new Error(`not a short amount: ${text}`);
  return Number(num.replace(/,/g, '')) * { K: 1e3, M: 1e6, B: 1e9, T: 1e12 }[unit as 'K' | 'M' | 'B' | 'T'];
};

/**
 * Each figure's exact value (`data-value`) and the digits it shows equal the API's. Amounts per
 * currency (`unconverted`) compare as their JSON text; shown, each names its currency with its
 * amount's digits, in the object's order (`USD 120.00, EUR 3.00`), and an empty one reads `none`.
 */
export const expectFigures = async (page: Page, expected: Record<string, string | number | null | Record<string, string>>) => {
  for (const [id, value] of Object.entries(expected)) {
    const { raw, shown } = await figure(page, id);
    if (value !== null && typeof value === 'object') {
      expect(raw, id).toBe(JSON.stringify(value));
      const parts = Object.entries(value);
      if (parts.length === 0) expect(shown, id).toBe('none');
      else {
        expect(
          shown.split(', ').map((part) => part.replace(/[^A-Z]/g, '')),
          `${id} shown as ${shown}`,
        ).toEqual(parts.map(([c]) => c));
        expect(digits(shown), `${id} shown as ${shown}`).toBe(parts.map(([, amount]) => digits(amount)).join(''));
      }
      continue;
    }
    expect(raw, id).toBe(value === null ? '' : String(value));
    if (typeof value === 'string') expect(digits(shown), `${id} shown as ${shown}`).toBe(digits(value));
    const { short, title } = await figure(page, id);
    if (short !== null) {
      // Written short: the exact text on hover, and the short form within 1 % of the value.
      expect(title, id).toBe(shown);
      expect(Math.abs(shortNumber(short) - Math.abs(Number(value))), `${id} shown short as ${short}`).toBeLessThanOrEqual(
        Math.abs(Number(value)) * 0.01,
      );
    }
    if (value === null) expect(shown, id).toBe('—');
  }
};

export const shoot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** axe-core over the page (WCAG 2.1 A/AA and best practices): no serious or critical violation. */
export const axe = async (page: Page, name: string) => {
  // Evaluated through the DevTools protocol: the page's CSP (script-src 'self') refuses inline scripts.
  await page.evaluate(readFileSync(resolve('node_modules/axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] });
    return r.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n: any) => n.target.join(' ')).slice(0, 5),
    }));
  });
  writeFileSync(join(ARTIFACTS, `axe-${name}.json`), JSON.stringify(result, null, 2));
  expect(
    result.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical'),
    name,
  ).toEqual([]);
};

export const noSideScroll = async (page: Page) =>
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);

/**
 * The figures whose text runs past their card: a label or value wider than its box (scrollWidth),
 * or whose text's box reaches past the card's edges. Empty when every figure fits.
 */
export const overflowingFigures = (page: Page) =>
  page.evaluate(() => {
    /** The boxes of an element's visible text (a visually hidden text is clipped to 1 px and left out). */
    const textBoxes = (el: HTMLElement) => {
      const boxes: DOMRect[] = [];
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement?.closest('.visually-hidden, [hidden]')) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        boxes.push(...Array.from(range.getClientRects()));
      }
      return boxes.filter((b) => b.width > 0);
    };
    return Array.from(document.querySelectorAll<HTMLElement>('[data-figure]'))
      .filter((card) => card.getClientRects().length > 0)
      .flatMap((card) => {
        const box = card.getBoundingClientRect();
        return Array.from(card.querySelectorAll<HTMLElement>('dt, dd.value'))
          .filter(
            (el) => el.scrollWidth > el.clientWidth + 1 || textBoxes(el).some((t) => t.right > box.right + 0.5 || t.left < box.left - 0.5),
          )
          .map((el) => `${card.dataset.figure}: ${el.textContent} (${Math.round(el.scrollWidth)} px in ${Math.round(box.width)} px)`);
      });
  });

/** A time as the dashboard writes it (UTC, to the minute). */
export const shown = (ts: string | null) => (ts ? `${ts.slice(0, 10)} ${ts.slice(11, 16)} UTC` : '—');
export type Row = Record<string, string | null>;
/** Each row's attributes and cells (by column name, from the cells' data-label) of a table. */
export const rowsOf = (page: Page, testId: string, attrs: string[]) =>
  page.locator(`[data-testid="${testId}"] tbody tr`).evaluateAll(
    (trs, names) =>
      trs.map((tr) => {
        const row: Record<string, string | null> = Object.fromEntries(names.map((n) => [n, tr.getAttribute(n)]));
        for (const cell of Array.from(tr.children)) {
          const label = cell.getAttribute('data-label');
          if (label) row[label] = (cell.textContent ?? '').trim();
        }
        return row;
      }),
    attrs,
  ) as Promise<Row[]>;
