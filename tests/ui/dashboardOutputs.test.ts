/**
 * The dashboard's job page beyond the grid, in a real browser (Debian's chromium, headless, driven by playwright-core)
 * against the local stack running the compiled app: the friendly sign-in page, the job list newest first, the live log
 * tail while the MPI task runs (and no more reads once it ended), stages that do not apply hidden, short node labels
 * with the full id on hover, the outputs panel whose links download without our token, the usage page (nodes' cost
 * beside the control plane's), and every page fitting 1280 and 1920 px without horizontal overflow. Screenshots at
 * both widths go to test-artifacts/ and their names are printed. Needs /usr/bin/chromium and dist/ built.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT, startStack, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { submitSpec } from '../../local/jobRunner';
import { until } from '../batch/until';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const DEMO_SPEC = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
const WIDTHS = [1280, 1920] as const;

/** A native job without input data: `command` on `nodes` nodes, optionally keeping `result.txt` as an output. */
function job(id: string, nodes: number, command: string, outputs = false): string {
  const spec = parse(DEMO_SPEC) as {
    pool: { nodes: number; startTask?: unknown };
    data: unknown;
    mpi: { command: string };
    tags: Record<string, string>;
  } & Record<string, unknown>;
  spec.id = id;
  spec.name = id;
  spec.tags = { suite: 'ui-outputs' };
  spec.pool.nodes = nodes;
  delete spec.pool.startTask;
  spec.data = { inputs: [] };
  spec.mpi.command = command;
  if (outputs) spec.outputs = { account: DATA_ACCOUNT.name, container: 'results', files: [{ pattern: 'result.txt' }] };
  return stringify(spec);
}

let stack: Stack;
let context: BrowserContext;
let page: Page;
let profileDir: string;
const consoleErrors: string[] = [];
/** Every request of the page under /api/jobs/ (the job's polls, its logs and outputs reads), in order. */
const requests: string[] = [];
const screenshots: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/ensure-deps.sh chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(ARTIFACTS, 'ui-outputs-host.log') });
  profileDir = mkdtempSync(path.join(os.tmpdir(), 'ui-outputs-chromium-'));
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
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) consoleErrors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    if (r.url().includes('/api/jobs/')) requests.push(r.url());
  });
}, 150_000);

afterAll(async () => {
  await context?.close();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  await stack?.stop();
  // Named in the test output, so a reviewer finds them.
  if (screenshots.length) console.log(`dashboard screenshots:\n${screenshots.map((s) => `  ${s}`).join('\n')}`);
}, 60_000);

/** Screenshots at 1280 and 1920 px, each checked for horizontal overflow: the document and every card fit. */
async function shootAndCheckFit(name: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    // Two frames: the layout at the new width is done.
    await page.evaluate('new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))');
    const docWidth = (await page.evaluate('document.scrollingElement.scrollWidth')) as number;
    expect({ name, width, docWidth: docWidth <= width }).toEqual({ name, width, docWidth: true });
    // A card scrolls its own overflow: it must have none either (a table cut off is as bad as a page too wide).
    const wide = (await page.evaluate(
      `[...document.querySelectorAll('.card')].filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.getAttribute('data-testid') + ':' + c.scrollWidth + '>' + c.clientWidth)`,
    )) as string[];
    expect({ name, width, overflowing: wide }).toEqual({ name, width, overflowing: [] });
    const file = path.join(ARTIFACTS, `dashboard-${name}-${width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    screenshots.push(path.relative(REPO_ROOT, file));
  }
  await page.setViewportSize({ width: 1280, height: 860 });
}

describe('dashboard: outputs, live log tail, node labels, usage', () => {
  it("signed out, shows a sign-in page rather than the API's 401, then signs in", async () => {
    await page.goto(`${stack.baseUrl}/api/dashboard`);
    await page.waitForSelector('[data-testid="signed-out"]', { timeout: 10_000 });
    expect(await page.textContent('[data-testid="signed-out"] h1')).toBe('Sign in to see your jobs');
    expect(await page.textContent('#status')).toBe('not signed in');
    expect(await page.getAttribute('#status', 'class')).toBe('muted');
    expect(await page.textContent('body')).not.toMatch(/answered 401/);
    await page.click('[data-testid="sign-in-big"]');
    await until('the signed-in name', async () => ((await page.textContent('[data-testid=who]'))?.includes('Local Developer') ? true : undefined), 10_000);
  });

  it('tails the running MPI task, hides stages that do not apply, labels nodes short, lists outputs that download', async () => {
    const first = await submitSpec(stack, job('ui-a-first', 1, 'true'));
    // Each rank prints a line every 0.3 s until the test has seen the tail grow and drops a stop file (the emulated
    // nodes are processes on this machine): no race between the task's end and the page's polls. Capped at 3 min.
    const stopFile = path.join(profileDir, 'stop-ui-out');
    const id = await submitSpec(
      stack,
      job(
        'ui-out',
        2,
        `i=0; while [ ! -e ${stopFile} ] && [ $i -lt 600 ]; do i=$((i+1)); echo "tick $i"; echo "warn $i" >&2; sleep 0.3; done; echo "result of $OMPI_COMM_WORLD_RANK" > result.txt`,
        true,
      ),
    );

    // Newest first: ui-out was submitted after ui-a-first, although the API lists by id.
    await page.evaluate('location.hash = "#/"');
    await page.waitForSelector(`[data-testid="job-row"][data-job-id="${id}"]`, { timeout: 30_000 });
    await page.waitForSelector(`[data-testid="job-row"][data-job-id="${first}"]`, { timeout: 30_000 });
    const order = await page.$$eval('[data-testid="job-row"]', (rows) => rows.map((r) => r.getAttribute('data-job-id')));
    expect(order.indexOf(id)).toBeLessThan(order.indexOf(first));
    await shootAndCheckFit('list');

    await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs/${id}`)}`);
    await page.waitForSelector(`[data-testid="job-page"][data-job-id="${id}"]`, { timeout: 10_000 });
    // The tail while the task runs: the master's stdout grows between polls without a reload.
    await page.waitForSelector('[data-testid="log-tail"][data-live="true"] [data-testid="tail-stdout"] pre >> text=tick', { timeout: 90_000 });
    const firstRead = (await page.textContent('[data-testid="tail-stdout"] pre')) ?? '';
    await until('the tail to grow', async () => ((await page.textContent('[data-testid="tail-stdout"] pre')) !== firstRead ? true : undefined), 30_000);
    expect(await page.textContent('[data-testid="tail-stderr"] pre')).toMatch(/warn \d+/);
    // Which node and file: the short label, the full id on hover, the file's name.
    const tailNode = (await page.getAttribute('[data-testid="tail-stdout"]', 'data-node')) ?? '';
    expect(tailNode).not.toBe('');
    expect(await page.getAttribute('[data-testid="tail-stdout"] h3 .mono', 'title')).toBe(tailNode);
    expect(await page.textContent('[data-testid="tail-stdout"] h3')).toMatch(/ · stdout\.txt/);
    // A native job without inputs: no image pull or staging stage, no "images pulled n/n" bar.
    const stages = await page.$$eval('[data-testid="timeline"] li [data-testid="job-state"]', (b) => b.map((x) => x.textContent));
    expect(stages).toContain('Running');
    expect(stages).not.toContain('PullingImages');
    expect(stages).not.toContain('StagingData');
    expect(await page.textContent('[data-testid="job-page"]')).not.toMatch(/Images pulled|Shards staged/);
    await shootAndCheckFit('job-running');
    writeFileSync(stopFile, '');

    await page.waitForSelector(`[data-testid="job-page"][data-job-id="${id}"][data-state="Succeeded"]`, { timeout: 120_000 });
    // The tail stops with the task: shown as last read, not read again.
    await page.waitForSelector('[data-testid="log-tail"][data-live="false"]', { timeout: 15_000 });
    const logReads = requests.filter((u) => u.includes(`/jobs/${id}/logs`)).length;
    const jobReads = requests.filter((u) => u.endsWith(`/jobs/${id}`)).length;
    await until(
      'another poll of the finished job',
      async () => (requests.filter((u) => u.endsWith(`/jobs/${id}`)).length > jobReads ? true : undefined),
      30_000,
    );
    expect(requests.filter((u) => u.includes(`/jobs/${id}/logs`)).length).toBe(logReads);

    // Outputs: the files under the job's prefix, each link a read-only URL that works without our token.
    await page.waitForSelector('[data-testid="output-link"][data-name="workdir/result.txt"]', { timeout: 30_000 });
    const names = await page.$$eval('[data-testid="output-link"]', (a) => a.map((x) => x.getAttribute('data-name')));
    expect(names).toEqual(expect.arrayContaining(['workdir/result.txt', 'logs/stdout.txt']));
    const link = page.locator('[data-testid="output-link"][data-name="workdir/result.txt"]');
    expect(await link.getAttribute('download')).toBe('result.txt');
    expect(await link.getAttribute('target')).toBe('_blank');
    const res = await fetch((await link.getAttribute('href')) ?? '');
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^result of \d\n$/);

    // Node labels: every node named in the page's tables shows a short label with its full id on hover.
    const named = await page.$$eval('[data-testid="node-name"]', (els) => els.map((e) => [e.textContent ?? '', e.getAttribute('title') ?? '']));
    expect(named.length).toBeGreaterThanOrEqual(3);
    // The local nodes' ids are 66 characters, as long as Azure's: a label is a short part of the id.
    const isShortOf = ([label, full]: string[]) => label.length <= 14 && full.length > 14 && full.includes(label.replace(/…$/, ''));
    for (const n of named) expect({ n, short: isShortOf(n) }).toEqual({ n, short: true });
    const cells = await page.$$eval('[data-testid="node-cell"]', (els) =>
      els.map((e) => [e.querySelector('.node-id')?.textContent ?? '', e.getAttribute('data-node') ?? '']),
    );
    for (const n of cells) expect({ n, short: isShortOf(n) }).toEqual({ n, short: true });
    await shootAndCheckFit('job');
  }, 300_000);

  it("shows the usage page: per job and in total, the nodes' cost beside the control plane's with the prices' date", async () => {
    await page.click('[data-testid="usage-link"]');
    await page.waitForSelector('[data-testid="usage-job"][data-job-id="ui-out"]', { timeout: 30_000 });
    expect(await page.textContent('[data-testid="usage-cp-cost"]')).toMatch(/^\d+\.\d{5} USD$/);
    expect(await page.textContent('[data-testid="usage-cp-prices"]')).toMatch(/^prices as of \d{4}-\d{2}-\d{2}/);
    expect(await page.textContent('[data-testid="usage-control-plane"]')).toMatch(/Functions CPU-seconds\s*\d+\.\d/);
    expect(await page.textContent('[data-testid="usage-control-plane"]')).toMatch(/storage transactions\s*\d+/);
    expect(await page.textContent('[data-testid="usage-nodes"]')).toMatch(/node-minutes/);
    const row = await page.$$eval('[data-testid="usage-job"][data-job-id="ui-out"] td', (td) => td.map((t) => t.textContent ?? ''));
    expect(row[2]).toMatch(/^2 × Standard_D8s_v5$/);
    expect(row[5]).toMatch(/^\d+\.\d{5} USD$/);
    expect(Number(row[6])).toBeGreaterThan(0);
    await shootAndCheckFit('usage');
  }, 60_000);

  it('logged no console errors', () => {
    expect(consoleErrors).toEqual([]);
  });
});
