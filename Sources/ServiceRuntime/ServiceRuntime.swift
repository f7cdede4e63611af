// The module's contents arrive with issue 29's moves: WorkerSession, worker process supervision,
// Backoff and StacklineEnvironment. This file keeps the target buildable until then.
