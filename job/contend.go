package job

// ShouldYield is a reserving job's answer to a worker saying that an
// earlier job wants the slots this job holds there: give them back, unless
// the job can already be placed (it is about to commit or cancel, which
// frees them as soon). It is the whole of the rule a submitter applies;
// the worker orders the jobs before asking.
func ShouldYield(feasible bool) bool { return !feasible }
