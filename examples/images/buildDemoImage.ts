/**
 * The demo image "hpc/mpi-demo:1.0": what the pipeline's docker/singularity examples need to run on a node.
 * Layer 1: /opt/mpi-demo with the `mpi-demo` entry point (build | run | bench | info) and the MPI programs' sources
 * (examples/mpi/*.c), compiled inside the container: shardsum with `mpi-demo build`, any of them on first use with
 * `mpi-demo bench <name>`.
 * Layer 2: incompressible filler of a configurable size, so that pulling the image moves real bytes and takes time.
 * The image's default command starts sshd on port 23, as MPI container recipes do.
 */
import { createCipheriv } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { BuiltImage, buildImage } from '../../local/registry/imageBuilder';
import { writeOciLayout } from '../../local/registry/layout';

export const DEMO_REPOSITORY = 'hpc/mpi-demo';
export const DEMO_TAG = '1.0';
export const DEFAULT_FILLER_BYTES = 8 * 1024 * 1024;

export interface DemoImageOptions {
  /** Size of the filler layer in bytes (default 8 MiB; tests use much less). 0 leaves the layer out. */
  fillerBytes?: number;
  repository?: string;
  tag?: string;
  /** When given, the image is also written into this OCI image layout. */
  layoutDir?: string;
  /** MPI program source placed at /opt/mpi-demo/src/shardsum.c (default examples/mpi/shardsum.c); the other programs of examples/mpi sit beside it. */
  mpiSource?: string;
}

/** Deterministic, incompressible bytes: AES-CTR keystream with a fixed key, so digests are stable across builds. */
export function fillerBytes(n: number): Buffer {
  const cipher = createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16, 0));
  return cipher.update(Buffer.alloc(n));
}

export async function buildDemoImage(opts: DemoImageOptions = {}): Promise<BuiltImage> {
  const staging = await mkdtemp(path.join(tmpdir(), 'mpi-demo-image-'));
  try {
    const app = path.join(staging, 'app');
    await cp(path.join(__dirname, 'mpi-demo', 'rootfs'), app, { recursive: true });
    await mkdir(path.join(app, 'opt', 'mpi-demo', 'src'), { recursive: true });
    // Every MPI program of examples/mpi, for `mpi-demo bench <name>` (the workload examples' benchmarks and solvers).
    const programs = path.join(__dirname, '..', 'mpi');
    for (const f of (await readdir(programs)).filter((n) => n.endsWith('.c')).sort())
      await cp(path.join(programs, f), path.join(app, 'opt', 'mpi-demo', 'src', f));
    await cp(opts.mpiSource ?? path.join(programs, 'shardsum.c'), path.join(app, 'opt', 'mpi-demo', 'src', 'shardsum.c'));
    const layers = [{ dir: app, createdBy: 'COPY rootfs/ /  # mpi-demo entry point and MPI source' }];
    const size = opts.fillerBytes ?? DEFAULT_FILLER_BYTES;
    if (size > 0) {
      const filler = path.join(staging, 'filler');
      await mkdir(path.join(filler, 'opt', 'mpi-demo', 'data'), { recursive: true });
      await writeFile(path.join(filler, 'opt', 'mpi-demo', 'data', 'filler.bin'), fillerBytes(size));
      layers.push({ dir: filler, createdBy: `RUN head -c ${size} /dev/urandom > /opt/mpi-demo/data/filler.bin` });
    }
    const image = await buildImage({
      repository: opts.repository ?? DEMO_REPOSITORY,
      tag: opts.tag ?? DEMO_TAG,
      layers,
      config: {
        Env: ['PATH=/opt/mpi-demo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'MPI_DEMO_HOME=/opt/mpi-demo'],
        Cmd: ['/usr/sbin/sshd', '-D', '-p', '23'],
        WorkingDir: '/opt/mpi-demo',
        ExposedPorts: { '23/tcp': {} },
      },
      labels: { 'org.opencontainers.image.title': 'mpi-demo', 'org.opencontainers.image.description': 'Demo MPI program for the HPC control plane' },
    });
    if (opts.layoutDir) await writeOciLayout(image, opts.layoutDir);
    return image;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
