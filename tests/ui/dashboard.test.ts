/**
 * The web dashboard in a real browser: Debian's chromium (headless) driven by playwright-core, against the
 * local stack running the compiled app (the page is served by functions/dashboard.ts, the data comes from the
 * job API, the jobs run real MPI on the Batch emulator). The browser signs in through the stack's App Service
 * Authentication emulation as the local user `dev`, who also submits the jobs (local/jobRunner's default caller);
 * the last tests sign out and come back in as an operator with the function key. Needs /usr/bin/chromium (`npm test` installs
 * it when missing) and dist/ built. Screenshots go to test-artifacts/.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT, startStack, type Stack } from '../../local/stack';
import { asOperator, submitSpec } from '../../local/jobRunner';
import { until } from '../batch/until';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const DEMO_SPEC = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
const TERMINAL = ['Succeeded', 'Failed', 'Cancelled'];

/** A cheap job: the demo spec without input data or the program build, running `command` on `nodes` nodes. */
function cheapJob(id: string, nodes: number, command: string): string {
  const spec = parse(DEMO_SPEC) as {
    pool: { nodes: number; startTask?: unknown };
    data: unknown;
    mpi: { command: string };
    tags: Record<string, string>;
  } & Record<string, unknown>;
  spec.id = id;
  spec.name = id;
  spec.tags = { suite: 'ui' };
  spec.pool.nodes = nodes;
  delete spec.pool.startTask;
  spec.data = { inputs: [] };
  spec.mpi.command = command;
  return stringify(spec);
}

let stack: Stack;
let context: BrowserContext;
let page: Page;
let profileDir: string;
const consoleErrors: string[] = [];
const deletes: { url: string; key?: string; authorization?: string }[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/ensure-deps.sh chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(ARTIFACTS, 'ui-host.log') });
  profileDir = mkdtempSync(path.join(os.tmpdir(), 'ui-chromium-'));
  // A persistent context is how playwright takes a fresh --user-data-dir of ours (launch() refuses the flag).
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 860 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  // Signed out, /.auth/me and the API answer 401 by design, which Chromium logs as a failed resource load.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) consoleErrors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (r.method() === 'DELETE') deletes.push({ url: r.url(), key: r.headers()['x-functions-key'], authorization: r.headers().authorization });
  });
}, 150_000);

afterAll(async () => {
  await context?.close();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  await stack?.stop();
}, 60_000);

/** The value of data-state on the first element matching `selector`, or '' when there is none. */
async function stateOf(selector: string): Promise<string> {
  const el = page.locator(selector).first();
  return (await el.count()) ? ((await el.getAttribute('data-state')) ?? '') : '';
}

async function nodeStates(): Promise<string[]> {
  return page.$$eval('[data-testid="node-cell"]', (cells) => cells.map((c) => c.getAttribute('data-state') ?? ''));
}

describe('web dashboard', () => {
  it('is served as one page with a strict CSP and revalidates by ETag', async () => {
    const res = await fetch(`${stack.baseUrl}/api/dashboard`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'.*script-src 'sha256-/);
    expect(await res.text()).toContain('<dialog id="cancel-dialog"');
    const again = await fetch(`${stack.baseUrl}/api/dashboard`, { headers: { 'if-none-match': res.headers.get('etag') ?? '' } });
    expect(again.status).toBe(304);
  });

  it('asks to sign in, and signs in through App Service Authentication as the local user', async () => {
    await page.goto(`${stack.baseUrl}/api/dashboard`);
    await page.waitForSelector('[data-testid="signed-out"]', { timeout: 10_000 });
    expect(await page.isVisible('[data-testid="key-form"]')).toBe(true);
    await page.click('[data-testid="sign-in"]');
    await until('the signed-in name', async () => ((await page.textContent('[data-testid=who]'))?.includes('Local Developer') ? true : undefined), 10_000);
    expect(await page.isVisible('[data-testid="sign-in"]')).toBe(false);
    expect(await page.isVisible('[data-testid="key-form"]')).toBe(false);
  });

  it('lists a running job, and its node grid progresses to done without a reload', async () => {
    const id = await submitSpec(stack, cheapJob('ui-grid', 3, 'sleep 5'));
    await page.goto(`${stack.baseUrl}/api/dashboard`);
    // Evaluated as strings: the tests compile without the DOM library.
    await page.evaluate('window.pageMark = "first-load"');

    const row = `[data-testid="job-row"][data-job-id="${id}"]`;
    await page.waitForSelector(row, { timeout: 30_000 });
    const listed = await stateOf(row);
    expect(TERMINAL).not.toContain(listed);
    expect(await page.textContent(`${row} td:nth-child(4)`)).toMatch(/\d+ (ms|s)|min/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-list.png'), fullPage: true });

    // Filters narrow the list through the API: no Failed jobs exist here.
    await page.selectOption('#filter-state', 'Failed');
    await page.waitForSelector('[data-testid="no-jobs"]', { timeout: 10_000 });
    await page.selectOption('#filter-state', '');
    await page.fill('#filter-tag', 'suite=ui');
    await page.waitForSelector(row, { timeout: 10_000 });

    await page.click(`${row} a`);
    await page.waitForSelector(`[data-testid="job-page"][data-job-id="${id}"]`, { timeout: 10_000 });

    // Watch the grid as the page polls: it must show the nodes in earlier states, then every node done.
    const seen = new Set<string>();
    const deadline = Date.now() + 120_000;
    let states: string[] = [];
    for (;;) {
      states = await nodeStates();
      states.forEach((s) => seen.add(s));
      const jobState = await stateOf('[data-testid="job-page"]');
      if (TERMINAL.includes(jobState) && states.length === 3 && states.every((s) => s === 'done')) break;
      if (jobState === 'Failed' || jobState === 'Cancelled')
        throw new Error(`job ${id} ended ${jobState}: ${await page.textContent('[data-testid="job-error"]').catch(() => '')}`);
      if (Date.now() > deadline) throw new Error(`job ${id} still ${jobState}, nodes ${states.join(',')}`);
      await page.waitForTimeout(250);
    }
    expect(await stateOf('[data-testid="job-page"]')).toBe('Succeeded');
    expect([...seen].filter((s) => s !== 'done').length).toBeGreaterThan(0);
    expect(await page.evaluate('window.pageMark')).toBe('first-load');
    // The finished job shows its timeline, exit codes and log links.
    expect(await page.$$eval('[data-testid="timeline"] li', (li) => li.length)).toBeGreaterThanOrEqual(5);
    expect(await page.textContent('[data-testid="mpi"]')).toContain('master');
    expect(await page.$$eval('[data-testid="exit-code"]', (rows) => rows.length)).toBeGreaterThanOrEqual(2);
    expect(await page.$$eval('[data-testid="log-link"]', (l) => l.length)).toBeGreaterThanOrEqual(1);
    // The cost card: the control plane's own estimated cost beside the nodes' (docs/capacity.md).
    await page.waitForSelector('[data-testid="control-plane-cost"]', { timeout: 10_000 });
    expect(await page.textContent('[data-testid="control-plane-cost"]')).toMatch(
      /^control plane ≈ \d+\.\d{5} USD \(Functions and storage; estimate, prices as of \d{4}-\d{2}-\d{2}/,
    );
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-job.png'), fullPage: true });
  }, 150_000);

  it("cancels a running job only after confirmation, with the signed-in user's token", async () => {
    const id = await submitSpec(stack, cheapJob('ui-cancel', 2, 'sleep 120'));
    await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs/${id}`)}`);
    await page.waitForSelector(`[data-testid="job-page"][data-job-id="${id}"][data-state="Running"]`, { timeout: 90_000 });

    await page.click('[data-testid="cancel-button"]');
    await page.waitForSelector('[data-testid="cancel-dialog"][open]');
    await page.click('#keep-running');
    await page.waitForSelector('[data-testid="cancel-dialog"]:not([open])', { state: 'attached' });
    await page.waitForTimeout(2000);
    expect(deletes).toEqual([]);
    expect(await stateOf('[data-testid="job-page"]')).toBe('Running');

    await page.click('[data-testid="cancel-button"]');
    // Signed in, no key is asked for.
    expect(await page.isVisible('[data-testid="key-input"]')).toBe(false);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-cancel-confirm.png') });
    await page.click('[data-testid="confirm-cancel"]');
    await page.waitForSelector(`[data-testid="job-page"][data-state="Cancelled"]`, { timeout: 90_000 });
    expect(deletes).toHaveLength(1);
    expect(deletes[0].url).toContain(`/api/jobs/${id}`);
    expect(deletes[0].key).toBeUndefined();
    expect(deletes[0].authorization).toMatch(/^Bearer ey/);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-cancelled.png'), fullPage: true });
  }, 150_000);

  it("shows the master's log of a finished job in the page, read with the session", async () => {
    await page.evaluate('location.hash = "#/jobs/ui-grid"');
    // The previous job's page stays until this one's first answer: wait for it before clicking its links.
    await page.waitForSelector('[data-testid="job-page"][data-job-id="ui-grid"] [data-testid="log-link"]', { timeout: 15_000 });
    await page.click('[data-testid="log-link"] >> nth=0 >> text=stdout');
    await page.waitForSelector('#log-panel:not([hidden])');
    // Polled from here: the page's Content-Security-Policy forbids the eval a string predicate would need.
    await until('the log to load', async () => ((await page.textContent('#log-content')) !== 'Loading…' ? true : undefined), 15_000);
    expect(await page.textContent('#log-title')).toMatch(/ · stdout$/);
    expect(await page.textContent('#log-content')).not.toMatch(/answered \d+/);
  }, 30_000);

  it('signed out, an operator gets in with the function key and sees every job', async () => {
    // An operator's job (not dev's): only an admin sees it.
    const opId = await submitSpec(stack, cheapJob('ui-operator', 1, 'true'), asOperator(stack));
    await page.goto(`${stack.baseUrl}/.auth/logout?post_logout_redirect_uri=/api/dashboard`);
    await page.waitForSelector('[data-testid="signed-out"]', { timeout: 10_000 });
    await page.fill('[data-testid="operator-key"]', 'wrong-key-wrong-key-wrong-key');
    await page.click('#use-key');
    await page.waitForSelector('[data-testid="signed-out"]', { timeout: 10_000 });
    await page.fill('[data-testid="operator-key"]', stack.host.keys.functionKey);
    await page.click('#use-key');
    for (const id of ['ui-grid', opId]) await page.waitForSelector(`[data-testid="job-row"][data-job-id="${id}"]`, { timeout: 15_000 });
    expect(await page.textContent('#key-state')).toBe('operator key set for this tab');
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
  }, 30_000);

  it('logged no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
