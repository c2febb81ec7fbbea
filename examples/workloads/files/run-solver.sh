#!/bin/bash
# A launch script of the kind codes ship (NAMD's charmrun wrappers, WRF's run scripts, CNTK's run_cntk.sh): it
# calls mpirun itself. The control plane runs it once on the master with the launch variables exported
# (docs/workloads.md, "Launcher"); this one launches shardsum over the job's data.
echo "custom launcher: np=${MPIJOB_NP} ppn=${MPIJOB_PPN} nodes=${MPIJOB_NODES} hosts=${AZ_BATCH_HOST_LIST}"
echo "host file ${MPIJOB_HOSTFILE}:"
cat "${MPIJOB_HOSTFILE}"
exec mpirun -np "${MPIJOB_NP}" --hostfile "${MPIJOB_HOSTFILE}" -x MPIJOB_DATA_DIR \
  "${AZ_BATCH_NODE_SHARED_DIR}/bin/shardsum" "${MPIJOB_DATA_DIR}"
