// Package gang holds the pure rules of time sharing that workers and
// submitters share: which of the jobs that share a host may run now (gang
// scheduling on aligned time slices, and the column a job's submitter
// picks among its hosts' free ones), whether a set of jobs fits in the
// memory an owner lends, and in which order a swap by checkpoint (the
// hybrid technique) stops and restarts whole jobs. It does no I/O and
// keeps no state: a worker reads its clock and its job table, calls these
// functions, and freezes, thaws, checkpoints or restarts processes
// (worker/proc.Freeze, Thaw); a submitter picks a column for its commits
// and drives its swap slices by the same rotation.
//
// # Gang scheduling without a master
//
// The schedule is a decentralized Ousterhout matrix. Time is cut into
// slices of Config.Slice, counted from the Unix epoch; slice k belongs to
// column k mod Config.Columns. Each host is a row: every gang-scheduled job
// on it holds one column. A host's offer lists its free columns
// (FreeColumns); the submitter picks one free on every host of the plan
// (PickColumn) and names it in the commit. Then every host runs the job's
// ranks in the slices of its column and freezes them in the others
// (Runnable), so all the ranks of a job run at once, with no message
// between hosts: only their clocks and the shared Config.
//
// A slice whose column no job of this host holds is not wasted: every job
// here runs in it (co-scheduled), so a host with one job never freezes it.
//
// Clock skew: hosts whose clocks differ by d switch at instants d apart, so
// at each boundary a job's ranks may run apart for d; with slices of L the
// lost fraction is at most d/L. The default slice (2 s) tolerates 100 ms of
// skew at a 5 % loss; NTP keeps hosts within a few ms.
package gang
