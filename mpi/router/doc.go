// Package router is the agent side of the MPI runtime: one router per agent
// accepts local rank processes on the agent's MPI socket, and per job routes
// their messages to local ranks directly or to remote agents over one
// multiplexed libp2p stream per (job, remote agent), with flow control.
// Delivery to a rank goes through one place that can drop duplicates, so that
// replicated ranks can be added without changing the library's API.
package router
