/**
 * The dashboard: hash routing between the job list and one job, polling the public API (about every 1.5 s
 * while something runs) and re-rendering without reloading the page, and the guarded cancel flow.
 */
import { ApiError, cancelJob, getJob, listJobs, readLog, storeKey, storedKey } from './api';
import { byId, h } from './dom';
import { JOB_STATES, isTerminal, parseRoute, type JobView, type ListFilters, type Route } from './model';
import { jobListTable, jobPage } from './pages';

const POLL_ACTIVE_MS = 1500;
const POLL_IDLE_MS = 10_000;

const view = byId('view');
const status = byId('status');
const filtersForm = byId<HTMLFormElement>('filters');
const stateSelect = byId<HTMLSelectElement>('filter-state');
const tagInput = byId<HTMLInputElement>('filter-tag');
const dialog = byId<HTMLDialogElement>('cancel-dialog');
const dialogForm = byId<HTMLFormElement>('cancel-form');
const keyInput = byId<HTMLInputElement>('key-input');
const dialogError = byId('cancel-error');
const dialogJob = byId('cancel-job');
const keyState = byId('key-state');
const logPanel = byId('log-panel');

let route: Route = parseRoute(location.hash);
let timer: number | undefined;
let inFlight: AbortController | undefined;
/** Bumped on every navigation, so a late answer for the previous page is dropped. */
let generation = 0;
let lastBody = '';
let current: JobView | undefined;

for (const s of JOB_STATES) stateSelect.append(h('option', { value: s }, s));

function filters(): ListFilters {
  return { state: stateSelect.value, tag: tagInput.value };
}

function showStatus(text: string, isError = false): void {
  status.textContent = text;
  status.className = isError ? 'bad' : 'muted';
}

function showKeyState(): void {
  keyState.textContent = storedKey() ? 'function key set for this tab' : 'no function key (needed to cancel)';
  byId('forget-key').hidden = !storedKey();
}

function schedule(ms: number): void {
  window.clearTimeout(timer);
  timer = window.setTimeout(() => void refresh(), ms);
}

async function refresh(): Promise<void> {
  const gen = generation;
  inFlight?.abort();
  inFlight = new AbortController();
  if (document.hidden) return schedule(POLL_ACTIVE_MS);
  let next = POLL_ACTIVE_MS;
  try {
    const now = Date.now();
    if (route.page === 'list') {
      const jobs = await listJobs(filters(), inFlight.signal);
      if (gen !== generation) return;
      view.replaceChildren(jobListTable(jobs, now));
      if (!jobs.some((j) => !isTerminal(j.state))) next = POLL_IDLE_MS / 2;
    } else {
      const job = await getJob(route.id, inFlight.signal);
      if (gen !== generation) return;
      current = job;
      const body = JSON.stringify(job);
      // A finished job no longer changes: leave the DOM alone so open details and selections stay.
      if (body !== lastBody || !isTerminal(job.state)) {
        view.replaceChildren(jobPage(job, now, { onCancel: openCancel, onLog: (node, stream) => void showLog(job.id, node, stream) }));
        lastBody = body;
      }
      if (isTerminal(job.state)) next = POLL_IDLE_MS;
    }
    showStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || gen !== generation) return;
    showStatus((err as Error).message, true);
    if (err instanceof ApiError && err.status === 404) view.replaceChildren(h('p', { class: 'empty' }, `No job ${route.page === 'job' ? route.id : ''}.`));
  }
  if (gen === generation) schedule(next);
}

function navigate(): void {
  route = parseRoute(location.hash);
  generation += 1;
  lastBody = '';
  current = undefined;
  filtersForm.hidden = route.page !== 'list';
  logPanel.hidden = true;
  document.title = route.page === 'job' ? `${route.id} · HPC jobs` : 'HPC jobs';
  view.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  void refresh();
}

function openCancel(): void {
  if (!current) return;
  dialogJob.textContent = `${current.name} (${current.id})`;
  keyInput.value = storedKey();
  dialogError.textContent = '';
  dialog.showModal();
  (keyInput.value ? byId('confirm-cancel') : keyInput).focus();
}

async function confirmCancel(): Promise<void> {
  if (!current) return;
  const key = keyInput.value.trim();
  if (!key) {
    dialogError.textContent = 'Enter the function key: cancelling needs it.';
    return;
  }
  storeKey(key);
  showKeyState();
  try {
    await cancelJob(current.id, key, 'cancelled from the dashboard');
    dialog.close();
    void refresh();
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      storeKey('');
      showKeyState();
      dialogError.textContent = 'The function key was refused.';
    } else {
      dialogError.textContent = (err as Error).message;
    }
  }
}

async function showLog(jobId: string, node: string, stream: 'stdout' | 'stderr'): Promise<void> {
  const key = storedKey() || window.prompt('Function key (reading logs needs it):')?.trim() || '';
  if (!key) return;
  storeKey(key);
  showKeyState();
  logPanel.hidden = false;
  const title = byId('log-title');
  const pre = byId('log-content');
  title.textContent = `${node} · ${stream}`;
  pre.textContent = 'Loading…';
  try {
    const log = await readLog(jobId, node, stream, key);
    pre.textContent = log.content || log.message || '(empty)';
  } catch (err) {
    pre.textContent = (err as Error).message;
  }
}

dialogForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void confirmCancel();
});
byId('keep-running').addEventListener('click', () => dialog.close());
byId('log-close').addEventListener('click', () => { logPanel.hidden = true; });
byId('forget-key').addEventListener('click', () => { storeKey(''); showKeyState(); });
filtersForm.addEventListener('submit', (ev) => ev.preventDefault());
filtersForm.addEventListener('input', () => {
  generation += 1;
  void refresh();
});
window.addEventListener('hashchange', navigate);
document.addEventListener('visibilitychange', () => { if (!document.hidden) void refresh(); });

showKeyState();
navigate();
