import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rmdir, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';

/** Writes a file by temp + rename so that readers (other processes, the Batch emulator) never see half of it. */
export async function writeFileAtomic(file: string, data: string | Buffer): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}

export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file}: ${(err as Error).message}`);
  }
}

export async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `fn` holding a lock directory (mkdir is atomic), so that concurrent docker commands on one node do not lose
 * each other's updates. A lock older than `staleMs` is taken over: its holder died.
 */
export async function withLock<T>(lockDir: string, fn: () => Promise<T>, staleMs = 30_000): Promise<T> {
  await mkdir(path.dirname(lockDir), { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      await mkdir(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const st = await stat(lockDir).catch(() => undefined);
      if (st && Date.now() - st.mtimeMs > staleMs) await rmdir(lockDir).catch(() => undefined);
      if (attempt > 2000) throw new Error(`timed out waiting for lock ${lockDir}`);
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 20));
    }
  }
  try {
    return await fn();
  } finally {
    await rmdir(lockDir).catch(() => undefined);
  }
}
