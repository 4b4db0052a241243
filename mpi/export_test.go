package mpi

// Kill closes the connection to the agent abruptly, as if the process died:
// no Finalize, no Abort.
func (s *Session) Kill() { _ = s.conn.Close() }
