/**
 * What an imported spec expects of the node image that the image catalog says it lacks (shared/core/images): the
 * CentOS-HPC module names and /opt paths Shipyard's recipes assumed, a container runtime the image does not have,
 * `library://` images (Apptainer has no Sylabs library remote configured), and a host MPI whose generation differs
 * from the one the spec declares for its container. Each becomes a report line and a "CANNOT RUN AS IS" header line
 * of the spec, so no recipe claims to run the way its author ran it when the image says otherwise.
 */
import { checkImage } from '../../../shared/core/images/imageChecks';
import type { JobSpec } from '../../../shared/core/spec';

export interface ImageFlag {
  /** Suffix of the task's Shipyard path the flag is reported against. */
  shipyardPath: string;
  target?: string;
  note: string;
}

const SHIPYARD_FIELD: Record<string, string> = {
  'mpi.preExecutionCommand': '.multi_instance.mpi.options.pre_execution_command',
  'mpi.coordinationCommand': '.multi_instance.coordination_command',
  'mpi.command': '.command',
  'pool.startTask.command': '.additional_node_prep',
  'container.runtime': '.container_runtime',
};

const major = (v: string) => /^(\d+)/.exec(v)?.[1];

export function imageFlags(spec: JobSpec): ImageFlag[] {
  const flags: ImageFlag[] = [];
  const r = checkImage(spec);
  for (const f of r.findings) {
    flags.push({
      shipyardPath: SHIPYARD_FIELD[f.path] ?? '',
      target: f.path,
      note: `${f.message}${f.kind === 'module' || f.kind === 'path' ? ' (a CentOS-HPC name or path: the current image names it differently or lacks it)' : ''}`,
    });
  }
  for (const image of spec.container.images) {
    if (typeof image === 'string' && image.startsWith('library://')) {
      flags.push({
        shipyardPath: '.singularity_image',
        target: 'container.images',
        note: `${image}: library:// needs the Sylabs Cloud library, which Apptainer does not configure (Shipyard's Singularity 3.x had it built in): add it in pool.startTask (apptainer remote add --no-login SylabsCloud cloud.sycloud.io), or push the image to a registry and use docker:// or oras://`,
      });
    }
  }
  // A host launcher (singularity, native) from a module: its MPI generation must match the container's.
  if (r.image && spec.container.runtime === 'singularity' && spec.mpi.version) {
    const loaded = r.image.modules.find((m) => (spec.mpi.preExecutionCommand ?? '').includes(`module load ${m.name}`));
    const hostVersion = loaded ? /(\d+(?:\.\d+)*)/.exec(loaded.what)?.[1] : undefined;
    if (loaded && hostVersion && major(hostVersion) !== major(spec.mpi.version)) {
      flags.push({
        shipyardPath: '.multi_instance.mpi.runtime',
        target: 'mpi.version',
        note: `host/image MPI mismatch: the host launcher ${loaded.name} is ${loaded.what} on ${r.image.title}, the container's MPI is ${spec.mpi.runtime} ${spec.mpi.version}: ranks of one generation cannot join a launcher of another; rebuild the image with the host's MPI or launch from inside the container`,
      });
    }
  }
  return flags;
}
