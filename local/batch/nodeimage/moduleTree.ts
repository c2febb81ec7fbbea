/**
 * The emulated node image's modulefiles, per image of the catalog (shared/core/images/catalog.ts): the emulated nodes of a
 * pool see exactly the `module` names Azure's image holds, so `module load mpi/impi` fails on an emulated
 * Ubuntu-HPC node with environment-modules' own "Unable to locate a modulefile" just as on Azure, and
 * `module avail` lists the catalog's names.
 *
 * What a name loads here: Open MPI and HPC-X names load Debian's Open MPI (the one MPI this machine has; the
 * modulefile in modulefiles/mpi/openmpi sets the variables Azure's modulefiles set); every other catalog name
 * (Intel MPI, MVAPICH) loads and sets the catalog's MPI_HOME/MPI_BIN, but its binaries are not on this machine,
 * which its `module whatis` says. An image without environment modules in the catalog gets an empty tree.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { NodeImage } from '../../../shared/core/images/catalog';

/** The emulator's modulefile of Debian's Open MPI (what mpi/openmpi and mpi/hpcx load here). */
const DEBIAN_OPENMPI_MODULEFILE = path.join(__dirname, 'modulefiles', 'mpi', 'openmpi');

const written = new Map<string, string>();

function tclQuote(s: string): string {
  return `"${s.replace(/[\\"$[\]]/g, (c) => `\\${c}`)}"`;
}

function modulefile(image: NodeImage, m: NodeImage['modules'][number]): string {
  if (/^mpi\/(openmpi|hpcx)/.test(m.name)) {
    return `#%Module1.0\n## ${m.name} of ${image.title} (${m.what}), emulated by Debian's Open MPI.\n${readFileSync(DEBIAN_OPENMPI_MODULEFILE, 'utf8').replace(/^#%Module1\.0\s*\n/, '')}`;
  }
  const lines = [
    '#%Module1.0',
    `## ${m.name} of ${image.title}: ${m.what}. The emulated node holds its name and variables, not its binaries.`,
    `module-whatis ${tclQuote(`${m.what} (emulated: not installed on this machine)`)}`,
  ];
  if (m.name.startsWith('mpi/')) lines.push('conflict mpi');
  if (m.home) {
    lines.push(
      `setenv MPI_HOME ${tclQuote(m.home)}`,
      `setenv MPI_BIN ${tclQuote(`${m.home}/bin`)}`,
      `setenv MPI_INCLUDE ${tclQuote(`${m.home}/include`)}`,
      `setenv MPI_LIB ${tclQuote(`${m.home}/lib`)}`,
      `prepend-path PATH ${tclQuote(`${m.home}/bin`)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The directory holding `image`'s modulefiles under `baseDir` (written once per process and image), for MODULEPATH.
 * Empty for an image without environment modules.
 */
export function moduleTreeFor(image: NodeImage, baseDir: string): string {
  const dir = path.join(baseDir, 'nodeimage', image.id.replace(/[^A-Za-z0-9._-]/g, '_'), 'modulefiles');
  if (written.get(dir) === image.id) return dir;
  mkdirSync(dir, { recursive: true });
  for (const m of image.modules) {
    const file = path.join(dir, ...m.name.split('/'));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, modulefile(image, m));
  }
  written.set(dir, image.id);
  return dir;
}
