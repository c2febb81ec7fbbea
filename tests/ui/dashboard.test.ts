/**
 * The web dashboard in a real browser: Debian's chromium (headless) driven by playwright-core, against the
 * local stack running the compiled app (the page is served by functions/dashboard.ts, the data comes from the
 * public job API, the jobs run real MPI on the Batch emulator). Needs /usr/bin/chromium (`npm test` installs
 * it when missing) and dist/ built. Screenshots go to test-artifacts/.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT, startStack, type Stack } from '../../local/stack';
import { submitSpec } from '../../local/jobRunner';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const DEMO_SPEC = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
const TERMINAL = ['Succeeded', 'Failed', 'Cancelled'];

/** A cheap job: the demo spec without input data or the program build, running `command` on `nodes` nodes. */
function cheapJob(id: string, nodes: number, command: string): string {
  const spec = parse(DEMO_SPEC) as { pool: { nodes: number; startTask?: unknown }; data: unknown; mpi: { command: string }; tags: Record<string, string> } & Record<string, unknown>;
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
const deletes: { url: string; key?: string }[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/ensure-deps.sh chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(ARTIFACTS, 'ui-host.log') });
  profileDir = mkdtempSync(path.join(os.tmpdir(), 'ui-chromium-'));
  // A persistent context is how playwright takes a fresh --user-data-dir of ours (launch() refuses the flag).
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
  page.on('request', (r) => { if (r.method() === 'DELETE') deletes.push({ url: r.url(), key: r.headers()['x-functions-key'] }); });
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
      if (jobState === 'Failed' || jobState === 'Cancelled') throw new Error(`job ${id} ended ${jobState}: ${await page.textContent('[data-testid="job-error"]').catch(() => '')}`);
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
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-job.png'), fullPage: true });
  }, 150_000);

  it('cancels a running job only after confirmation, with the function key', async () => {
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
    await page.fill('[data-testid="key-input"]', stack.host.keys.functionKey);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-cancel-confirm.png') });
    await page.click('[data-testid="confirm-cancel"]');
    await page.waitForSelector(`[data-testid="job-page"][data-state="Cancelled"]`, { timeout: 90_000 });
    expect(deletes).toHaveLength(1);
    expect(deletes[0].url).toContain(`/api/jobs/${id}`);
    expect(deletes[0].key).toBe(stack.host.keys.functionKey);
    expect(await page.evaluate('sessionStorage.length')).toBe(1);
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-cancelled.png'), fullPage: true });
  }, 150_000);

  it('shows the master\'s log of a finished job in the page, read with the stored function key', async () => {
    await page.evaluate('location.hash = "#/jobs/ui-grid"');
    await page.click('[data-testid="log-link"] >> nth=0 >> text=stdout');
    await page.waitForSelector('#log-panel:not([hidden])');
    await page.waitForFunction('document.getElementById("log-content").textContent !== "Loading…"', undefined, { timeout: 15_000 });
    expect(await page.textContent('#log-title')).toMatch(/ · stdout$/);
    expect(await page.textContent('#log-content')).not.toMatch(/answered \d+/);
  }, 30_000);

  it('logged no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
