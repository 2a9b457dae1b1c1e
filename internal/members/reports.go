package members

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Deaths a member has seen travel to the members it exchanges state with
// (memberlist's push-pull, at every join and every PushPullInterval), as
// the user state of hooks.LocalState. memberlist itself drops news of a
// node it does not know: a speaker that restarted after another node's
// speaker died (a crashloop, an OOM kill) would never learn of that death
// and, had it only the dead node's Lease, count it alive until the Lease
// ran out while the others gave its addresses to nobody. A report only
// fills in a node this process has never seen (book.reported); what it
// saw itself, and memberlist's later news, win.

// report is one node another member remembers Dead or Left.
type report struct {
	node  string
	state State
}

const (
	reportsVersion = 1
	// maxNodeName is the longest Node name (a DNS subdomain).
	maxNodeName = 253
)

// encodeReports: a version byte, then per report a state byte, the
// name's length as a uvarint and the name.
func encodeReports(reps []report) []byte {
	out := []byte{reportsVersion}
	for _, r := range reps {
		out = append(out, byte(r.state))
		out = binary.AppendUvarint(out, uint64(len(r.node)))
		out = append(out, r.node...)
	}
	return out
}

var errReportsVersion = errors.New("member reports: unknown version")

// decodeReports parses encodeReports' output; anything else is an error,
// never a partial list. A length in more bytes than its uvarint needs is
// an error too, so that one list has one encoding.
func decodeReports(buf []byte) ([]report, error) {
	if len(buf) == 0 || buf[0] != reportsVersion {
		return nil, errReportsVersion
	}
	var out []report
	for rest := buf[1:]; len(rest) > 0; {
		state := State(rest[0])
		if state != Dead && state != Left {
			return nil, fmt.Errorf("member reports: state %d at offset %d is neither dead nor left", rest[0], len(buf)-len(rest))
		}
		n, size := binary.Uvarint(rest[1:])
		if size <= 0 || size != len(binary.AppendUvarint(nil, n)) || n == 0 || n > maxNodeName || uint64(len(rest)-1-size) < n {
			return nil, fmt.Errorf("member reports: bad node name length at offset %d", len(buf)-len(rest)+1)
		}
		name := rest[1+size : 1+size+int(n)]
		out = append(out, report{node: string(name), state: state})
		rest = rest[1+size+int(n):]
	}
	return out, nil
}
