# Shared by the NFS model tools of emulated Batch nodes (exportfs, mount, umount, mountpoint in ../bin).
# Emulated nodes are sandboxes of one machine: an NFS export is a line in the exporting node's table, and a mount is
# the mount point replaced by a symbolic link to the exported directory, recorded in the client's table. Real nodes
# run the kernel's NFS server and client; these tools exist on emulated nodes only.
set -u
nfs_root="${AZ_BATCH_NODE_ROOT_DIR:-}"
if [ -z "$nfs_root" ]; then echo "${tool:-nfs} (batch emulator): AZ_BATCH_NODE_ROOT_DIR is not set: this runs only on an emulated Batch node" >&2; exit 1; fi
nfs_state="$nfs_root/volatile/emulator-nfs"
nfs_exports="$nfs_state/exports"   # client<TAB>path<TAB>options
nfs_mounts="$nfs_state/mounts"     # source<TAB>mountpoint<TAB>target
mkdir -p "$nfs_state"
touch "$nfs_exports" "$nfs_mounts"

# An absolute, normalized path without resolving links (a mount point is a link once mounted).
nfs_abs() { case "$1" in /*) realpath -m -s -- "$1" ;; *) realpath -m -s -- "$PWD/$1" ;; esac; }

# True when $1 lies in directory $2.
nfs_inside() { [ "$1" = "$2" ] || case "$1" in "$2"/*) true ;; *) false ;; esac; }

# Rewrites table $1 without the lines whose field $2 equals $3 (atomically: readers on other nodes never see half a file).
nfs_drop() {
  local tmp="$1.$$.tmp"
  awk -F '\t' -v f="$2" -v v="$3" '$f != v' "$1" > "$tmp" && mv -f "$tmp" "$1"
}

nfs_add() {
  local tmp="$1.$$.tmp"
  { cat "$1"; printf '%s\n' "$2"; } > "$tmp" && mv -f "$tmp" "$1"
}
