/**
 * The dashboard: hash routing between the job list and one job, polling the API (about every 1.5 s while
 * something runs) and re-rendering without reloading the page, and the guarded cancel flow. Who the page is:
 * the App Service Authentication session, else an operator key (api.ts).
 */
import { ApiError, cancelJob, currentSession, getJob, listJobs, loadSession, readLog, signInUrl, signOutUrl, storeKey, storedKey } from './api';
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
const keyForm = byId<HTMLFormElement>('key-form');
const operatorKey = byId<HTMLInputElement>('operator-key');
const who = byId('who');
const signIn = byId<HTMLAnchorElement>('sign-in');
const signOut = byId<HTMLAnchorElement>('sign-out');
const keyLabel = byId('key-label');

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
  const session = currentSession();
  who.textContent = session ? `signed in as ${session.name}` : '';
  signIn.hidden = Boolean(session);
  signIn.href = signInUrl();
  signOut.hidden = !session;
  signOut.href = signOutUrl();
  keyState.textContent = session ? '' : storedKey() ? 'operator key set for this tab' : 'not signed in';
  byId('forget-key').hidden = !storedKey();
  // Signed in, the session's token does the cancelling; the key field is for operators without a session.
  keyLabel.hidden = Boolean(session);
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
    keyForm.hidden = true;
    showStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || gen !== generation) return;
    showStatus((err as Error).message, true);
    if (err instanceof ApiError && err.status === 401) {
      // Not signed in (or the key was refused): offer both ways in, and poll no more until one is taken.
      if (storedKey()) storeKey('');
      showKeyState();
      keyForm.hidden = false;
      view.replaceChildren(h('p', { class: 'empty', 'data-testid': 'signed-out' }, 'Sign in to see your jobs.'));
      return;
    }
    keyForm.hidden = true;
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
  (keyInput.value || currentSession() ? byId('confirm-cancel') : keyInput).focus();
}

async function confirmCancel(): Promise<void> {
  if (!current) return;
  if (!currentSession()) {
    const key = keyInput.value.trim();
    if (!key) {
      dialogError.textContent = 'Sign in, or enter an operator key: cancelling needs one.';
      return;
    }
    storeKey(key);
    showKeyState();
  }
  try {
    await cancelJob(current.id, 'cancelled from the dashboard');
    dialog.close();
    void refresh();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      storeKey('');
      showKeyState();
      dialogError.textContent = 'The operator key was refused.';
    } else if (err instanceof ApiError && err.status === 403) {
      dialogError.textContent = 'Your roles do not allow cancelling (it needs Jobs.Submit for your own jobs, or Jobs.Admin).';
    } else {
      dialogError.textContent = (err as Error).message;
    }
  }
}

async function showLog(jobId: string, node: string, stream: 'stdout' | 'stderr'): Promise<void> {
  logPanel.hidden = false;
  const title = byId('log-title');
  const pre = byId('log-content');
  title.textContent = `${node} · ${stream}`;
  pre.textContent = 'Loading…';
  try {
    const log = await readLog(jobId, node, stream);
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
byId('forget-key').addEventListener('click', () => { storeKey(''); showKeyState(); void refresh(); });
keyForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  storeKey(operatorKey.value.trim());
  operatorKey.value = '';
  showKeyState();
  generation += 1;
  void refresh();
});
filtersForm.addEventListener('submit', (ev) => ev.preventDefault());
filtersForm.addEventListener('input', () => {
  generation += 1;
  void refresh();
});
window.addEventListener('hashchange', navigate);
document.addEventListener('visibilitychange', () => { if (!document.hidden) void refresh(); });

void loadSession().then(() => {
  showKeyState();
  navigate();
});
