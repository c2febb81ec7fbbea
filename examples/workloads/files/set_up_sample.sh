# The setup script of Batch Shipyard's OpenFOAM-TCP-OpenMPI recipe, in the shape it has there: sourced by the
# pre-execution command in the master's container, it prepares the case in a directory every node sees, decomposes
# it for the job's rank count and exports the launcher ($mpirun) and what the ranks need. The "solver" here is
# heat1d from the hpc/mpi-demo image (mpi-demo bench heat1d); the shared directory is the job's scratch.
export mpirun=mpirun
export MPI_BUFFER_SIZE=20000000
case_dir="$MPIJOB_SCRATCH/case"
echo "set_up_sample: decomposing input/heat1d into $case_dir for $MPIJOB_NP ranks"
mpi-demo bench heat1d decompose input/heat1d "$case_dir" "$MPIJOB_NP"
