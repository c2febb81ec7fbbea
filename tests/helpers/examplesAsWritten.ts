/**
 * Which end-to-end file submits which example byte for byte: the file as committed, through `POST /api/jobs` with a
 * user's token, to a stack seeded as `npm start` seeds it (local/seedExamples.ts, REGISTRY_ALIASES as the stack sets
 * them). The e2e files submit exactly these lists (they import them), and tests/unit/examplesAsWritten.test.ts checks
 * that every example docs/workloads.md marks "runs locally: yes" is in one of them. Paths are relative to the
 * repository root.
 */

/** tests/e2e/workloads.test.ts: the nine shapes that run at the same time on one stack. */
export const WORKLOADS_AS_WRITTEN = [
  'examples/workloads/openfoam-modules-openmpi.yaml',
  'examples/workloads/hpcg-vendor-env.yaml',
  'examples/workloads/namd-custom-launcher.yaml',
  'examples/workloads/mpibench-singularity-docker.yaml',
  'examples/workloads/mpibench-openmpi-docker.yaml',
  'examples/workloads/osu-latency-bw-native.yaml',
  'examples/workloads/hpl-openmpi-native.yaml',
  'examples/workloads/hpcg-openmpi-singularity.yaml',
  'examples/workloads/openfoam-tcp-openmpi-docker.yaml',
] as const;

/** tests/e2e/workloadsData.test.ts: the data side (files, scratch, mounts, outputs). */
export const WORKLOADS_DATA_AS_WRITTEN = [
  'examples/workloads/openfoam-decompose-solve-reconstruct.yaml',
  'examples/workloads/lammps-crash-keeps-restart.yaml',
  'examples/workloads/wrf-tables-from-url.yaml',
] as const;

/** tests/e2e/network.test.ts: the job's environment (PBS and Slurm scripts, the head node's NFS and the managed file systems in the pool's subnet, scratch). */
export const NETWORK_AS_WRITTEN = [
  'examples/workloads/pbs-script-compat.yaml',
  'examples/workloads/nfs-headnode-in-vnet.yaml',
  'examples/workloads/parallel-scratch-ior.yaml',
  'examples/workloads/beeond-scratch-ior.yaml',
  'examples/workloads/slurm-script-shared-fs.yaml',
] as const;

/** tests/e2e/secrets.test.ts: the licensed app, its licence server at 10.0.0.4:27000 in the examples' subnet. */
export const LICENSED_AS_WRITTEN = ['examples/workloads/licensed-app-flexlm.yaml'] as const;

/** Every example some e2e file submits as written, by the file that does. */
export const SUBMITTED_AS_WRITTEN: Readonly<Record<string, readonly string[]>> = {
  'tests/e2e/workloads.test.ts': WORKLOADS_AS_WRITTEN,
  'tests/e2e/workloadsData.test.ts': WORKLOADS_DATA_AS_WRITTEN,
  'tests/e2e/network.test.ts': NETWORK_AS_WRITTEN,
  'tests/e2e/secrets.test.ts': LICENSED_AS_WRITTEN,
};

/**
 * "Runs locally" examples that no e2e file submits as written yet, each with what its test changes. Listed so the gap
 * is visible and checked: the unit test fails when one of these starts being submitted as written (remove it here) or
 * when a "runs locally" example is neither submitted as written nor listed here.
 */
export const NOT_YET_AS_WRITTEN: Readonly<Record<string, string>> = {};
