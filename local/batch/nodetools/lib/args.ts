/** Command-line flags in the Docker CLI's style: `-dit`, `-e K=V`, `-eK=V`, `--name x`, `--name=x`, `--rm=false`, `--`. */
import { CliError } from './errors';

export interface FlagDef {
  names: string[];
  value: boolean;
}

export interface Parsed {
  values: Map<string, string[]>;
  positionals: string[];
}

export class FlagSet {
  private readonly byName = new Map<string, { key: string; value: boolean }>();

  constructor(
    private readonly command: string,
    defs: Record<string, FlagDef>,
  ) {
    for (const [key, d] of Object.entries(defs)) for (const n of d.names) this.byName.set(n, { key, value: d.value });
  }

  private unknown(flag: string): CliError {
    return new CliError(`unknown flag: ${flag}\nSee '${this.command} --help'.`, 125);
  }

  /** With `stopAtPositional`, the first positional and everything after it are positionals (run, exec). */
  parse(argv: string[], stopAtPositional: boolean): Parsed {
    const values = new Map<string, string[]>();
    const positionals: string[] = [];
    const add = (key: string, v: string): void => {
      values.set(key, [...(values.get(key) ?? []), v]);
    };
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i];
      if (a === '--') {
        positionals.push(...argv.slice(i + 1));
        break;
      }
      if (!a.startsWith('-') || a === '-') {
        if (stopAtPositional) {
          positionals.push(...argv.slice(i));
          break;
        }
        positionals.push(a);
        continue;
      }
      if (a.startsWith('--')) {
        const eq = a.indexOf('=');
        const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
        const def = this.byName.get(name);
        if (!def) throw this.unknown(`--${name}`);
        if (def.value) {
          const v = eq >= 0 ? a.slice(eq + 1) : argv[++i];
          if (v === undefined) throw new CliError(`flag needs an argument: --${name}\nSee '${this.command} --help'.`, 125);
          add(def.key, v);
        } else add(def.key, eq >= 0 ? a.slice(eq + 1) : 'true');
        continue;
      }
      for (let j = 1; j < a.length; j++) {
        const def = this.byName.get(a[j]);
        if (!def) throw this.unknown(`-${a[j]}`);
        if (!def.value) {
          add(def.key, 'true');
          continue;
        }
        let v = a.slice(j + 1);
        if (v.startsWith('=')) v = v.slice(1);
        if (!v) {
          v = argv[++i];
          if (v === undefined) throw new CliError(`flag needs an argument: '${a[j]}' in -${a[j]}\nSee '${this.command} --help'.`, 125);
        }
        add(def.key, v);
        break;
      }
    }
    return { values, positionals };
  }
}

export function flag(p: Parsed, key: string): boolean {
  const v = p.values.get(key);
  return v !== undefined && v[v.length - 1] !== 'false';
}

export function last(p: Parsed, key: string): string | undefined {
  const v = p.values.get(key);
  return v?.[v.length - 1];
}

export function all(p: Parsed, key: string): string[] {
  return p.values.get(key) ?? [];
}

export const bool = (...names: string[]): FlagDef => ({ names, value: false });
export const val = (...names: string[]): FlagDef => ({ names, value: true });
