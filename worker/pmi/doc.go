// Package pmi is the agent's side of MPICH's process management interface
// (PMI-1, the "simple" wire protocol that Hydra's mpiexec, Slurm and Flux
// also speak): what lets a program built with MPICH start under Zorilla
// unchanged (`zorilla submit --pmi`).
//
// Each rank process inherits one end of a socket pair as PMI_FD, with
// PMI_RANK and PMI_SIZE in its environment. Serve answers its requests,
// one text line each (`cmd=put kvsname=K key=k value=v`), with the rank's
// Job: the key-value space (KVS) of the job and its barriers. Parse is the
// pure decoder of a request line; every limit (line, key, value, KVS name,
// keys per rank) is checked there or in Serve, and a request that breaks
// one gets an answer with rc != 0, or the connection is closed; nothing
// else on the agent is touched.
//
// The KVS of a job is spread over its agents (Fence): each agent holds
// what its own ranks put until a barrier, then the agents merge what was
// put up a tree over the job's hosts (host i's parent is (i-1)/Fanout) and
// the root sends the merge back down it, so each agent answers its ranks'
// gets from its own copy. The first barrier is the two-phase start's
// second phase: an agent reports Ready when every local rank has reached
// it and lets the merge go up only once the submitter released the job.
//
// ProcessMapping says which ranks share a host in the form MPICH reads
// from the PMI_process_mapping key, so that it uses shared memory there.
package pmi
