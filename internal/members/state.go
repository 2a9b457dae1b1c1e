package members

// State is what this speaker knows about one node's speaker.
type State int

const (
	// Unknown: this process has never seen the node.
	Unknown State = iota
	// Alive: the node is a member and answers probes.
	Alive
	// Suspect: this speaker's own probe of the node failed and the
	// cluster has not declared it dead yet. The node may still refute;
	// callers that want stable ownership treat Suspect like Alive.
	Suspect
	// Dead: the cluster declared the node failed (it stopped answering
	// without leaving). Remembered until the node is seen Alive again.
	Dead
	// Left: the node announced a graceful leave. Remembered until the node
	// is seen Alive again.
	Left
)

// String returns the lower-case name used in logs and metric labels.
func (s State) String() string {
	switch s {
	case Alive:
		return "alive"
	case Suspect:
		return "suspect"
	case Dead:
		return "dead"
	case Left:
		return "left"
	default:
		return "unknown"
	}
}

// knownStates are the states a remembered node can be in, in label order.
func knownStates() []State { return []State{Alive, Suspect, Dead, Left} }
