/**
 * `docker` for emulated Batch nodes (no daemon runs here): the subset of the Docker CLI that the control plane and
 * Batch container tasks emit, working on the node's sandbox. Run through local/batch/nodetools/bin/docker.
 */
import { exec, inspect, kill, logs, ps, rm, stop } from './containerCommands';
import { images, login, logout, pull, rmi } from './imageCommands';
import { load, save } from './archiveCommands';
import { run } from './run';
import { CliError } from '../lib/errors';
import { Session, openSession } from './session';

type Command = (s: Session, argv: string[]) => Promise<number>;

const COMMANDS: Record<string, Command> = {
  pull,
  images,
  login,
  logout,
  rmi,
  save,
  load,
  run,
  exec,
  ps,
  kill,
  stop,
  rm,
  logs,
  inspect: (s, a) => inspect(s, a),
  version: async (s) => {
    s.out('Client:\n Version:    24.0.0-emulated\n API version: 1.43\n Context:    hpc-control-plane emulated node');
    return 0;
  },
};

const GROUPS: Record<string, Record<string, Command>> = {
  image: { pull, save, load, ls: images, list: images, rm: rmi, inspect: (s, a) => inspect(s, a, 'image') },
  container: { run, exec, ls: ps, list: ps, ps, kill, stop, rm, logs, inspect: (s, a) => inspect(s, a, 'container') },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === 'help') {
    process.stdout.write(`Usage:  docker COMMAND\n\nCommands: ${Object.keys(COMMANDS).join(', ')}, image, container\n`);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write('Docker version 24.0.0-emulated, build hpc-control-plane\n');
    return 0;
  }
  let command = COMMANDS[name];
  let args = rest;
  if (!command && GROUPS[name]) {
    command = GROUPS[name][rest[0]];
    args = rest.slice(1);
  }
  if (!command) throw new CliError(`docker: '${name}' is not a docker command.\nSee 'docker --help'`, 1);
  return command(openSession(), args);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: Error) => {
    if (err instanceof CliError) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = err.exitCode;
    } else {
      process.stderr.write(`docker: ${err.stack ?? err.message}\n`);
      process.exitCode = 125;
    }
  },
);
