package announce

import (
	"reflect"
	"slices"
)

// BGPMemo decides like BGP and gives the last result again when nothing
// it depends on changed: the configuration, the node's name, labels and
// eligibility, and every Service by Key and Rev (a Service of Rev 0
// always counts as changed). BGP does not depend on liveness, so member
// list and Lease changes, which trigger most reconciles, cost a
// comparison instead of a computation. The zero value is ready to use; it
// is not safe for concurrent use, and callers must not modify the
// result.
type BGPMemo struct {
	valid bool
	node  string
	cfg   any
	me    *node
	svcs  []holderRev
	res   BGPResult
}

// Decide returns BGP(st, nodeName).
func (m *BGPMemo) Decide(st State, nodeName string) BGPResult {
	me := st.node(nodeName)
	svcs := make([]holderRev, len(st.Services))
	trusted := true
	for i := range st.Services {
		s := &st.Services[i]
		svcs[i] = holderRev{s.Key, s.Rev}
		trusted = trusted && s.Rev != 0
	}
	if m.valid && trusted && m.node == nodeName && slices.Equal(m.svcs, svcs) &&
		reflect.DeepEqual(m.me, me) && reflect.DeepEqual(m.cfg, configValue(st)) {
		return m.res
	}
	m.res = BGP(st, nodeName)
	m.valid, m.node, m.cfg, m.me, m.svcs = trusted, nodeName, configValue(st), me, svcs
	return m.res
}
