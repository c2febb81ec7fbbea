/**
 * The dashboard: hash routing between the job list and one job, polling the API (about every 1.5 s while
 * something runs) and re-rendering without reloading the page, and the guarded cancel flow. Who the page is:
 * the App Service Authentication session, else an operator key (api.ts).
 */
import {
  ApiError,
  cancelJob,
  currentSession,
  getJob,
  getUsage,
  listJobs,
  listOutputs,
  loadSession,
  readLog,
  readLogSince,
  signInUrl,
  signOutUrl,
  storeKey,
  storedKey,
} from './api';
import { byId, h } from './dom';
import { JOB_STATES, isTerminal, parseRoute, type JobView, type ListFilters, type Route } from './model';
import { appendTail, emptyTail, newestFirst, outputsDue, shouldTail, type LogTail } from './jobDetail';
import type { JobPageDetail } from './detailPages';
import { usagePage } from './detailPages';
import { usageSummary } from './usage';
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
/** The job page's live tail and outputs, kept between polls (reset on navigation). */
let detail: JobPageDetail = {};
/** The job state the outputs were last asked in: asked again when it changes (CleaningUp → ended). */
let outputsAskedIn = '';

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
      const jobs = newestFirst(await listJobs(filters(), inFlight.signal));
      if (gen !== generation) return;
      view.replaceChildren(jobListTable(jobs, now));
      if (!jobs.some((j) => !isTerminal(j.state))) next = POLL_IDLE_MS / 2;
    } else if (route.page === 'usage') {
      const usage = await getUsage(inFlight.signal);
      if (gen !== generation) return;
      view.replaceChildren(usagePage(usageSummary(usage)));
      next = POLL_IDLE_MS * 3;
    } else {
      const job = await getJob(route.id, inFlight.signal);
      if (gen !== generation) return;
      current = job;
      const changed = await updateDetail(job, inFlight.signal);
      if (gen !== generation) return;
      const body = JSON.stringify(job);
      // A finished job no longer changes: leave the DOM alone so open details and selections stay.
      if (body !== lastBody || changed || !isTerminal(job.state)) {
        view.replaceChildren(jobPage(job, now, { onCancel: openCancel, onLog: (node, stream) => void showLog(job.id, node, stream) }, detail));
        lastBody = body;
      }
      if (isTerminal(job.state)) next = POLL_IDLE_MS;
    }
    keyForm.hidden = true;
    showStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (err) {
    if ((err as Error).name === 'AbortError' || gen !== generation) return;
    if (err instanceof ApiError && err.status === 401) {
      // Not signed in (or the key was refused): a sign-in page rather than the API's 401, offering both ways in;
      // no more polling until one is taken.
      const refused = Boolean(storedKey());
      if (refused) storeKey('');
      showStatus(refused ? 'the operator key was refused' : 'not signed in', refused);
      showKeyState();
      keyForm.hidden = false;
      view.replaceChildren(
        h(
          'section',
          { class: 'card welcome', 'data-testid': 'signed-out' },
          h('h1', {}, 'Sign in to see your jobs'),
          h('p', {}, 'The dashboard shows the jobs you submitted (an admin sees every job), their nodes, logs, outputs and cost.'),
          h('p', {}, h('a', { class: 'button', href: signInUrl(), 'data-testid': 'sign-in-big' }, 'Sign in')),
        ),
      );
      return;
    }
    showStatus((err as Error).message, true);
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
  detail = {};
  outputsAskedIn = '';
  filtersForm.hidden = route.page !== 'list';
  logPanel.hidden = true;
  document.title = route.page === 'job' ? `${route.id} · HPC jobs` : route.page === 'usage' ? 'Usage · HPC jobs' : 'HPC jobs';
  view.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  void refresh();
}

/**
 * Reads what the job page shows beside the job: while the MPI task runs, the new end of its stdout and stderr (from
 * the byte read last time on); once it has ended, the outputs (again when the state changes: they are complete once
 * the job has ended). Says whether anything changed, so a finished job's page is redrawn only then.
 */
async function updateDetail(job: JobView, signal: AbortSignal): Promise<boolean> {
  let changed = false;
  if (shouldTail(job)) {
    const prev = detail.tail ?? { stdout: emptyTail('stdout'), stderr: emptyTail('stderr'), live: true };
    const read = async (t: LogTail): Promise<LogTail> => {
      try {
        return appendTail(t, await readLogSince(job.id, t.stream, t.offset, t.node || undefined, signal));
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw err;
        return { ...t, message: (err as Error).message };
      }
    };
    const [stdout, stderr] = await Promise.all([read(prev.stdout), read(prev.stderr)]);
    detail.tail = { stdout, stderr, live: true };
    changed = true;
  } else if (detail.tail?.live) {
    // The task ended: the tail stays as last read, no longer refreshed.
    detail.tail = { ...detail.tail, live: false };
    changed = true;
  }
  if (outputsDue(job) && outputsAskedIn !== job.state) {
    outputsAskedIn = job.state;
    try {
      detail.outputs = { answer: await listOutputs(job.id, signal) };
    } catch (err) {
      if ((err as Error).name === 'AbortError') {
        outputsAskedIn = '';
        throw err;
      }
      detail.outputs = {
        message:
          err instanceof ApiError && err.status === 404 && /no outputs section/.test(err.message)
            ? 'This job has no outputs section: nothing was uploaded.'
            : (err as Error).message,
      };
    }
    changed = true;
  } else if (!outputsDue(job) && job.spec?.outputs !== undefined && !detail.outputs) {
    detail.outputs = { message: 'The outputs are uploaded when the MPI task ends.' };
    changed = true;
  }
  return changed;
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
byId('log-close').addEventListener('click', () => {
  logPanel.hidden = true;
});
byId('forget-key').addEventListener('click', () => {
  storeKey('');
  showKeyState();
  void refresh();
});
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
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refresh();
});

void loadSession().then(() => {
  showKeyState();
  navigate();
});
