package fsm

// Fault is a deliberate defect of the state machine. It exists only so
// that the chaos checker can be shown to fail on a broken build: a checker
// that cannot fail proves nothing.
type Fault int

// The deliberate defects.
const (
	// NoFault is the correct state machine.
	NoFault Fault = iota
	// FaultReplaysCreate stores a replay (same request_id, same content,
	// another attempt) as a new entry, as a server without idempotency
	// would.
	FaultReplaysCreate
	// FaultForgetWrites acknowledges new entries without storing them.
	FaultForgetWrites
)
