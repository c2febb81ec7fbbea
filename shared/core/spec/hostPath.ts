/**
 * Host paths as the kernel resolves them, for comparing a user's bind source with the deny-list: `//proc`, `/proc/`,
 * `/./proc` and `/proc//self` all name /proc, so a rule written for "/proc" must see them as /proc. A ".." segment is
 * refused rather than resolved (it could climb out through a symlink the control plane cannot see).
 */

/** The normalized absolute path (single slashes, no "." segments, no trailing slash; "/" for the root), or undefined
 * when `path` is not absolute or has a ".." segment. */
export function normalizeHostPath(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') return undefined;
    segments.push(segment);
  }
  return `/${segments.join('/')}`;
}

/** True when normalized `path` is `root` or below it. */
export function isUnder(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}
