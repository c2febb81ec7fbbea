/**
 * Where job events go (shared/adapters/events, docs/events.md): the settings of the event relay. Parsed here, beside the rest of
 * the configuration, so nothing else reads these variables.
 *
 *   EVENTS_SOURCE_URL              the API's public origin, the CloudEvents `source` prefix (default https://<WEBSITE_HOSTNAME>)
 *   EVENTS_TOPIC_ENDPOINT          an Event Grid topic (CloudEvents 1.0 input schema), reached with the app's managed identity
 *   EVENTS_WEBHOOKS                comma-separated `name=url` webhook endpoints
 *   EVENTS_WEBHOOK_SECRETS         comma-separated `name=whsec_<base64>` signing secrets (in Azure a Key Vault reference)
 *   EVENTS_WEBHOOK_ALLOW_LOOPBACK  true lets webhooks be http on a loopback address (the local stack's receiver)
 *   EVENTS_MAX_ATTEMPTS, EVENTS_RETRY_INITIAL_SECONDS, EVENTS_RETRY_MAX_SECONDS   retries of one event to one endpoint
 *   EVENTS_RELAY_SCHEDULE          NCRONTAB of the relay timer that finds transitions not yet delivered
 */
import { z } from 'zod';
import { webhookUrlProblem } from '../events/webhookAddress';

export interface WebhookTarget {
  /** Lower-case name: the delivery cursor and the attempt records are kept per name. */
  name: string;
  url: string;
  /** Standard Webhooks secret, `whsec_` + base64 of 24-64 random bytes. */
  secret: string;
}

export interface EventsConfig {
  /** Origin of the public API (no path): the CloudEvents source is `<origin>/api/jobs/<id>`. Unset: a relative source. */
  sourceBaseUrl?: string;
  /** Event Grid topic endpoint, e.g. https://topic.westeurope-1.eventgrid.azure.net/api/events. */
  topicEndpoint?: string;
  webhooks: WebhookTarget[];
  /** Whether webhook URLs may name a loopback host over http (local use only). */
  allowLoopback: boolean;
  /** Tries of one event to one endpoint (the first included) before it is recorded abandoned and the next one goes. */
  maxAttempts: number;
  retryInitialMs: number;
  retryMaxMs: number;
  /** NCRONTAB of the relay timer. */
  relaySchedule: string;
}

/** Every minute: the relay is the safety net (a queue message announces each transition at once). */
export const DEFAULT_EVENTS_RELAY_SCHEDULE = '0 */1 * * * *';

/** The relay timer's schedule, read when the function is registered (like the sweep's). */
export function eventsRelaySchedule(env: Record<string, string | undefined> = process.env): string {
  const v = env.EVENTS_RELAY_SCHEDULE?.trim();
  return v ? v : DEFAULT_EVENTS_RELAY_SCHEDULE;
}

export const eventsEnvSchema = {
  EVENTS_SOURCE_URL: z.string().trim().optional(),
  WEBSITE_HOSTNAME: z.string().trim().optional(),
  EVENTS_TOPIC_ENDPOINT: z.string().trim().optional(),
  EVENTS_WEBHOOKS: z.string().trim().optional(),
  EVENTS_WEBHOOK_SECRETS: z.string().optional(),
  EVENTS_WEBHOOK_ALLOW_LOOPBACK: z.string().trim().optional(),
  EVENTS_MAX_ATTEMPTS: z.string().trim().optional(),
  EVENTS_RETRY_INITIAL_SECONDS: z.string().trim().optional(),
  EVENTS_RETRY_MAX_SECONDS: z.string().trim().optional(),
  EVENTS_RELAY_SCHEDULE: z.string().trim().optional(),
};

type EventsEnv = { [K in keyof typeof eventsEnvSchema]?: string };

const NAME_RE = /^[a-z0-9][a-z0-9-]{0,31}$/;
/** Standard Webhooks: secrets are 24-64 random bytes, base64 after the whsec_ prefix. */
const SECRET_RE = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

function intIn(env: EventsEnv, name: keyof EventsEnv, fallback: number, min: number, max: number, problems: string[]): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}: must be an integer in [${min}, ${max}], got "${v}"`);
    return fallback;
  }
  return n;
}

/** `name=value` pairs of a comma list; `what` names the variable in errors. */
function pairs(text: string | undefined, what: string, problems: string[]): Map<string, string> {
  const out = new Map<string, string>();
  (text ?? '').split(',').forEach((entry, i) => {
    const t = entry.trim();
    if (!t) return;
    const eq = t.indexOf('=');
    const name = eq > 0 ? t.slice(0, eq).trim() : '';
    if (!NAME_RE.test(name)) {
      problems.push(`${what}: entry ${i + 1} must be "name=value" with a name of 1-32 lower-case letters, digits or "-"`);
      return;
    }
    if (out.has(name)) problems.push(`${what}: "${name}" is listed twice`);
    out.set(name, t.slice(eq + 1).trim());
  });
  return out;
}

function originOf(value: string, what: string, problems: string[]): string | undefined {
  try {
    const u = new URL(value);
    if ((u.protocol === 'https:' || u.protocol === 'http:') && u.pathname.replace(/\/+$/, '') === '' && !u.search && !u.username) return u.origin;
  } catch {
    // reported below
  }
  problems.push(`${what}: must be an http(s) origin with no path, e.g. https://func-hpc.azurewebsites.net, got ${JSON.stringify(value)}`);
  return undefined;
}

/** Reads the event settings; every problem is pushed to `problems` with the variable's name. */
export function parseEventsConfig(env: EventsEnv, problems: string[]): EventsConfig {
  const loopback = env.EVENTS_WEBHOOK_ALLOW_LOOPBACK || 'false';
  if (loopback !== 'true' && loopback !== 'false') problems.push('EVENTS_WEBHOOK_ALLOW_LOOPBACK: must be "true" or "false"');
  const allowLoopback = loopback === 'true';

  let sourceBaseUrl: string | undefined;
  if (env.EVENTS_SOURCE_URL) sourceBaseUrl = originOf(env.EVENTS_SOURCE_URL, 'EVENTS_SOURCE_URL', problems);
  else if (env.WEBSITE_HOSTNAME) sourceBaseUrl = originOf(`https://${env.WEBSITE_HOSTNAME}`, 'WEBSITE_HOSTNAME', problems);

  let topicEndpoint: string | undefined;
  if (env.EVENTS_TOPIC_ENDPOINT) {
    try {
      const u = new URL(env.EVENTS_TOPIC_ENDPOINT);
      if (u.protocol !== 'https:' || u.username || u.password) throw new Error('not https');
      topicEndpoint = u.toString();
    } catch {
      problems.push(`EVENTS_TOPIC_ENDPOINT: must be the https endpoint of an Event Grid topic, e.g. https://topic.westeurope-1.eventgrid.azure.net/api/events`);
    }
  }

  const urls = pairs(env.EVENTS_WEBHOOKS, 'EVENTS_WEBHOOKS', problems);
  // App Service leaves a Key Vault reference it cannot resolve as the setting's text: never take it for secrets.
  const unresolved = /^@Microsoft\.KeyVault\(/i.test((env.EVENTS_WEBHOOK_SECRETS ?? '').trim());
  if (unresolved) problems.push('EVENTS_WEBHOOK_SECRETS: an unresolved Key Vault reference (the secret is missing or the app identity cannot read it)');
  const secrets = unresolved ? new Map<string, string>() : pairs(env.EVENTS_WEBHOOK_SECRETS, 'EVENTS_WEBHOOK_SECRETS', problems);
  const webhooks: WebhookTarget[] = [];
  for (const [name, url] of urls) {
    const urlProblem = webhookUrlProblem(url, allowLoopback);
    if (urlProblem) problems.push(`EVENTS_WEBHOOKS: "${name}": ${urlProblem}`);
    const secret = secrets.get(name);
    const m = secret === undefined ? null : SECRET_RE.exec(secret);
    const bytes = m ? Buffer.from(m[1], 'base64').length : 0;
    if (secret === undefined) {
      if (!unresolved) problems.push(`EVENTS_WEBHOOK_SECRETS: no secret for webhook "${name}"`);
    } else if (!m || bytes < 24 || bytes > 64) {
      problems.push(`EVENTS_WEBHOOK_SECRETS: the secret of "${name}" must be "whsec_" followed by the base64 of 24-64 random bytes`);
    }
    if (!urlProblem && secret !== undefined && m) webhooks.push({ name, url, secret });
  }
  for (const name of secrets.keys()) if (!urls.has(name)) problems.push(`EVENTS_WEBHOOK_SECRETS: "${name}" is not a webhook of EVENTS_WEBHOOKS`);

  const retryInitialSeconds = intIn(env, 'EVENTS_RETRY_INITIAL_SECONDS', 5, 1, 86_400, problems);
  const retryMaxSeconds = intIn(env, 'EVENTS_RETRY_MAX_SECONDS', 7_200, 1, 7 * 86_400, problems);
  if (retryInitialSeconds > retryMaxSeconds) {
    problems.push(`EVENTS_RETRY_INITIAL_SECONDS (${retryInitialSeconds}) must not exceed EVENTS_RETRY_MAX_SECONDS (${retryMaxSeconds})`);
  }
  return {
    ...(sourceBaseUrl !== undefined ? { sourceBaseUrl } : {}),
    ...(topicEndpoint !== undefined ? { topicEndpoint } : {}),
    webhooks,
    allowLoopback,
    maxAttempts: intIn(env, 'EVENTS_MAX_ATTEMPTS', 24, 1, 100, problems),
    retryInitialMs: retryInitialSeconds * 1000,
    retryMaxMs: retryMaxSeconds * 1000,
    relaySchedule: eventsRelaySchedule(env),
  };
}
