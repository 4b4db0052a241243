// Package worker is the gatekeeper of the local machine: the owner policy
// (J applications, P processes each, cores, memory, requirements, allow and
// deny lists) as a pure function, reservation leases with expiry, staging of
// programs and inputs verified by sha256, and launching, watching, limiting
// and cleaning up the processes of the jobs this machine takes part in.
package worker
