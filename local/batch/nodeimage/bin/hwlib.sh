# Sourced by the emulated hardware tools (ibstat, ib_write_bw, stream, lsmod): reads this node's line of the modelled hardware
# map ($AZ_BATCH_EMULATOR_HARDWARE, written by the emulator from local/batch/model/hardware.ts) into hw_* variables.
# Emulator only: on Azure these are the real tools (infiniband-diags, perftest, STREAM).
hw_line=""
if [ -n "${AZ_BATCH_EMULATOR_HARDWARE:-}" ] && [ -r "$AZ_BATCH_EMULATOR_HARDWARE" ]; then
  hw_line="$(awk -F '\t' -v ip="${AZ_BATCH_EMULATOR_NODE_IP:-}" '$1==ip {print; exit}' "$AZ_BATCH_EMULATOR_HARDWARE")"
fi
if [ -z "$hw_line" ]; then
  echo "$(basename "$0") (batch emulator): no modelled hardware for this node" >&2
  exit 1
fi
IFS=$'\t' read -r hw_ip hw_ports hw_state hw_phys hw_rate hw_ibbw hw_stream hw_peermem <<<"$hw_line"
[ "$hw_ports" = "-" ] && hw_ports=""
