package fsm

// GroupPending reports whether applied batches wait in the open group for
// a commit, so tests can wait for the timer's commit instead of a while.
func (f *FSM) GroupPending() bool { return f.pending.Load() }
