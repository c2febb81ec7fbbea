/** The host's structured log (pino) and the mapping from the worker's log levels to pino's. */
import pino, { type DestinationStream, type Level, type Logger } from 'pino';
import type { RpcLogLevel } from './coreModule';

/**
 * The full log to a file (appended) at the host's level, and a second view of it on a console stream with its own
 * threshold (`npm start`: the file keeps everything, the terminal shows warnings and above unless asked for more).
 */
export interface SplitDestination {
  file: string;
  console: { level: string; stream: DestinationStream };
}

export type LogDestination = DestinationStream | string | number | SplitDestination;

function isSplit(d: LogDestination | undefined): d is SplitDestination {
  return typeof d === 'object' && d !== null && 'file' in d && 'console' in d;
}

/** The more verbose of two pino levels. */
function verbosest(a: string, b: string): string {
  const value = (l: string) => pino.levels.values[l] ?? pino.levels.values.info;
  return value(a) <= value(b) ? a : b;
}

export interface HostLogger {
  log: Logger;
  /** Flushes, and closes a file the logger opened itself (caller-provided streams stay open). */
  close(): void;
}

export function createHostLogger(level = 'info', destination?: LogDestination): HostLogger {
  if (isSplit(destination)) {
    const file = pino.destination({ dest: destination.file, sync: true, mkdir: true });
    const streams = pino.multistream([
      { level: level as Level, stream: file },
      { level: destination.console.level as Level, stream: destination.console.stream },
    ]);
    // The logger lets through what either stream wants; each stream keeps to its own level.
    const log = pino({ level: verbosest(level, destination.console.level), base: { component: 'functions-host' } }, streams);
    return {
      log,
      close: () => {
        file.flushSync();
        file.end();
      },
    };
  }
  if (destination === undefined || typeof destination === 'number' || typeof destination === 'string') {
    const boom = pino.destination({ dest: destination ?? 1, sync: true, mkdir: typeof destination === 'string' });
    const log = pino({ level, base: { component: 'functions-host' } }, boom);
    return {
      log,
      close: () => {
        boom.flushSync();
        if (typeof destination === 'string') boom.end();
      },
    };
  }
  return { log: pino({ level, base: { component: 'functions-host' } }, destination), close: () => undefined };
}

/**
 * A human-readable destination for the CLI (one line per entry, invocation id and function name in front).
 * pino-pretty is a dev dependency: the local tools only run from a development checkout.
 */
export function prettyDestination(colorize: boolean): DestinationStream {
  const pretty = require('pino-pretty') as (opts: Record<string, unknown>) => DestinationStream;
  return pretty({
    colorize,
    sync: true,
    singleLine: true,
    ignore: 'pid,hostname,component,category,invocationId,functionName',
    messageFormat: '{if functionName}[{functionName} {invocationId}] {end}{msg}',
  });
}

/** pino level for a worker log level; undefined for 'none' (not logged). */
export function pinoLevel(level: RpcLogLevel): Level | undefined {
  switch (level) {
    case 'trace':
      return 'trace';
    case 'debug':
      return 'debug';
    case 'information':
      return 'info';
    case 'warning':
      return 'warn';
    case 'error':
      return 'error';
    case 'critical':
      return 'fatal';
    default:
      return undefined;
  }
}
