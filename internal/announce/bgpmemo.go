package announce

import "reflect"

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
	if m.unchanged(st, nodeName, me) {
		return m.res
	}
	m.res = BGP(st, nodeName)
	m.node, m.cfg, m.me = nodeName, configValue(st), me
	m.svcs = m.svcs[:0]
	m.valid = true // unless a Service has no Rev
	for i := range st.Services {
		r := revOf(&st.Services[i])
		m.svcs = append(m.svcs, r)
		m.valid = m.valid && r.rev != 0
	}
	return m.res
}

// unchanged reports whether st and the node are those of the last call.
// It allocates nothing: it runs at every reconcile. A valid memo holds no
// Rev 0, so a Service without a Rev never matches.
func (m *BGPMemo) unchanged(st State, nodeName string, me *node) bool {
	if !m.valid || m.node != nodeName || len(m.svcs) != len(st.Services) {
		return false
	}
	for i := range st.Services {
		if m.svcs[i] != revOf(&st.Services[i]) {
			return false
		}
	}
	return reflect.DeepEqual(m.me, me) && reflect.DeepEqual(m.cfg, configValue(st))
}
