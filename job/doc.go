// Package job owns what a job is on its submitter's side: its description
// and validation, its states and record, the offers that come back and
// placement (P2P-MPI's feasibility, spread and concentrate, rank numbering,
// replicas on distinct hosts), what a failure triggers (Recover), the
// checkpoint manifest's rules, and the records kept on disk. These are
// plain functions over values; job/lifecycle drives them.
//
// # Placement (pure)
//
// The offers collected for a job, each with the submitter's own RTT to the
// offerer, form P2P-MPI's rlist. SortRList orders it by latency (OrderRList
// by a rank preference). Place then runs section 4.2-4.3 of the paper:
//
//	slist = rlist[1 .. min(|rlist|, n×r)]          SelectHosts
//	c_i   = min(P_i, n)                             Capacity
//	feasible iff |slist| >= r and Σ c_i >= n×r      Feasible
//	u_i   by spread (round-robin) or concentrate    Strategy
//	ranks: u_i consecutive ranks per host, mod n    Proc{Rank, Replica}
//
// Since u_i <= c_i <= n, the ranks of one host are distinct: no host ever
// holds two copies of a rank, and every rank appears exactly r times.
// Offers that run nothing (u_i = 0) and the spares beyond slist come back in
// Plan.Spares. Hold those leases until the job runs: Replan re-places a job
// without the hosts that failed to start, using the spares first (CrossGrid's
// retry), and says ErrInfeasible when a new flood is needed.
// Plan.RankTable is the table the commits carry (proto.RankTable, checked
// by its Check); Plan.Check verifies plans read back from disk.
//
// # Descriptions
//
// A Description comes from flags (NewDescription, ParseRequire, ParseEnv,
// ParseSize) or from a JSON or YAML job file (LoadDescription), read
// strictly: unknown fields, duplicate keys and trailing documents are
// refused. Validate names the field in every error ("nodes: must be >= 1,
// got 0") and bounds every count, size and length. Example job file:
//
//	executable: ./ring
//	args: [-size, "1024"]
//	nodes: 16
//	replicas: 2
//	strategy: concentrate        # or spread (the default)
//	require: {os: linux, arch: amd64, cores: 4, memory: 2G, labels: [gpu]}
//	prefer: rtt                  # rank preference: rtt, cores or memory
//	inputs: [data.in]
//	outputs: [result.txt]
//	env: {OMP_NUM_THREADS: 4}
//	stdout: std.out
//	stderr: std.err
//	timeout: 90m                 # wall-clock limit of the run
//	deadline: 2m                 # scheduling deadline
//
// # States and records
//
// A job moves waiting → reserving → starting → running → done | failed |
// cancelled | stopped; Transition is the pure step function and refuses
// illegal moves. A failed start may go back to starting (retry on the
// spares) or reserving (match again), and a running job that lost a host
// with r = 1 to reserving. Recover decides what a Failure triggers. A
// Record keeps the description, key, plan and dated history; Store keeps
// records under <data-dir>/jobs/<id>/record.json, written atomically, and
// List reports unreadable records without failing.
//
// IDs (proto.NewJobID, proto.ParseJobID) are safe as folder names; a Key
// is the job's secret, redacted when printed.
//
// # The rest of the submitter's side
//
// The wire vocabulary both sides share is in job/proto; the job's life on
// its submitter, a pure state machine, in job/lifecycle; the service that
// runs it, in job/submitter.
package job
