/** Reading a spec file the way the API will decode it: .json as JSON, anything else as YAML. */
import { readFileSync } from 'node:fs';
import { CliError, ExitCode } from './errors';

export interface SpecFile {
  path: string;
  text: string;
  contentType: 'application/json' | 'application/yaml';
}

export function readSpecFile(file: string): SpecFile {
  let text: string;
  try {
    text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the spec file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, ExitCode.Usage);
  }
  return { path: file, text, contentType: /\.json$/i.test(file) ? 'application/json' : 'application/yaml' };
}
