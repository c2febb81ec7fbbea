/** Loads the mpiJob orchestration and its activities into the function app (the host indexes functions/*.js). */
import '../orchestrations/register';
