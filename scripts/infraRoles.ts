/**
 * infra/roles.json, the one list of Azure roles the deployment needs, and the table infra/README.md shows of it.
 *   node --import tsx scripts/infraRoles.ts --write    regenerate the table in infra/README.md
 * (tests/deploy/infra.test.ts fails when the committed table is stale).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export const ROLES_FILE = path.resolve(__dirname, '..', 'infra', 'roles.json');
export const INFRA_README = path.resolve(__dirname, '..', 'infra', 'README.md');
export const TABLE_BEGIN = '<!-- ROLE-TABLE:BEGIN (generated from infra/roles.json by scripts/infraRoles.ts; do not edit by hand) -->';
export const TABLE_END = '<!-- ROLE-TABLE:END -->';

export interface RoleDefinition {
  name: string;
  id: string;
  doc: string;
}

export interface CallSite {
  file: string;
  contains: string;
}

export interface RoleAssignment {
  principal: string;
  role: string;
  scope: string;
  why: string;
  /** Azure SDK packages of the product tree whose calls need this role. */
  sdk: string[];
  /** Where the code makes the calls (each `file` must still contain `contains`). */
  calls: CallSite[];
}

export interface RolesFile {
  roles: Record<string, RoleDefinition>;
  principals: Record<string, { bicep: string; what: string }>;
  scopes: Record<string, { bicep: string[]; type: string; what: string }>;
  notServices: Record<string, string>;
  assignments: RoleAssignment[];
}

export function readRoles(file = ROLES_FILE): RolesFile {
  return JSON.parse(readFileSync(file, 'utf8')) as RolesFile;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderRoleTable(r: RolesFile): string {
  const rows = r.assignments.map((a) => {
    const role = r.roles[a.role];
    const calls = [...new Set(a.calls.map((c) => `\`${c.file}\``))].join(', ') || '—';
    return `| ${cell(r.principals[a.principal].what)} | [${role.name}](${role.doc}) \`${role.id}\` | ${cell(r.scopes[a.scope].what)} | ${cell(a.why)} | ${calls} |`;
  });
  return ['| Identity | Role | Scope | Why | Calls in the code |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** The README with its generated table replaced; throws when the markers are missing. */
export function withRoleTable(readme: string, table: string): string {
  const begin = readme.indexOf(TABLE_BEGIN);
  const end = readme.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`${INFRA_README} lacks the role table markers`);
  return `${readme.slice(0, begin + TABLE_BEGIN.length)}\n${table}\n${readme.slice(end)}`;
}

if (require.main === module) {
  const readme = readFileSync(INFRA_README, 'utf8');
  const updated = withRoleTable(readme, renderRoleTable(readRoles()));
  if (process.argv.includes('--write')) {
    writeFileSync(INFRA_README, updated);
    process.stdout.write(`wrote the role table of ${path.relative(process.cwd(), INFRA_README)}\n`);
  } else {
    process.stdout.write(renderRoleTable(readRoles()) + '\n');
  }
}
