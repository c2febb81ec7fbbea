/** Registers the mpiJob orchestration and every activity it calls with the Functions programming model. */
import './mpiJob';
import './activities/jobState';
import './activities/pool';
import './activities/batchJob';
import './activities/nodeTasks';
import './activities/staging';
import './activities/mpi';
import './activities/costPrice';
