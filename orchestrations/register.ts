/** Registers the mpiJob orchestration and every activity it calls with the Functions programming model. */
import * as df from 'durable-functions';
import { MPI_JOB_ORCHESTRATION } from '../shared/core/contract';
import { mpiJobOrchestrator } from './mpiJob';
import { MPI_WAIT_ORCHESTRATION, mpiWaitOrchestrator } from './stages/mpiWait';
import './activities/jobState';
import './activities/pool';
import './activities/batchJob';
import './activities/nodeTasks';
import './activities/staging';
import './activities/sourcesCheck';
import './activities/imageEvidence';
import './activities/mpi';
import './activities/preflight';
import './activities/costPrice';
import './activities/workloadData';
import './activities/outputsCheck';
import './activities/scheduling';
import './activities/failureEvidence';

df.app.orchestration(MPI_JOB_ORCHESTRATION, mpiJobOrchestrator);
df.app.orchestration(MPI_WAIT_ORCHESTRATION, mpiWaitOrchestrator);
