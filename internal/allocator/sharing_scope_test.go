package allocator

import (
	"strings"
	"testing"

	"github.com/herald-lb/herald/internal/service"
)

func shareAcross(ns ...string) poolOpt {
	return func(p *Pool) { p.ShareAcrossNamespaces = ns }
}

// TestSharingStaysInANamespace: a sharing key joins Services of one
// namespace; Services of two namespaces share only where the pool lets
// both namespaces (or every namespace) do so.
func TestSharingStaysInANamespace(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []any
		joins bool
	}{
		{"no consent", nil, false},
		{"one of the two namespaces listed", []any{shareAcross("x", "z")}, false},
		{"both listed", []any{shareAcross("x", "y")}, true},
		{"every namespace", []any{shareAcross(AllNamespaces)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, pool("p", append([]any{"198.51.100.0/28"}, c.opts...)...))
			wantAssignment(t, mustAssign(t, a, svc("x/a", sharing("k"))), "p", "198.51.100.0")
			want := "198.51.100.1"
			if c.joins {
				want = "198.51.100.0"
			}
			b := mustAssign(t, a, svc("y/b", sharing("k"), ports("UDP/53")))
			wantAssignment(t, b, "p", want)
			if refused := b.Refused != ""; refused == c.joins || (refused && (!strings.Contains(b.Refused, "another namespace") || strings.Contains(b.Refused, "x/"))) {
				t.Errorf("refusal %q", b.Refused)
			}
			// the same namespace always shares
			wantAssignment(t, mustAssign(t, a, svc("x/c", sharing("k"), ports("UDP/54"))), "p", "198.51.100.0")
			wantAssignment(t, mustAssign(t, a, svc("x/a", sharing("k"))), "p", "198.51.100.0")
			checkBook(t, a)
		})
	}
}

// TestSharingRefusalNamesNoOtherNamespace: what a refused joiner is told
// names a Service of another namespace by nothing but that.
func TestSharingRefusalNamesNoOtherNamespace(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/32"))
	mustAssign(t, a, svc("x/secret-name", sharing("k")))
	for _, req := range []service.Request{
		svc("y/b", sharing("k"), ports("UDP/53")),
		svc("y/b", sharing("k"), ports("UDP/53"), ips("198.51.100.0")),
		svc("y/b", ips("198.51.100.0")),
	} {
		_, err := a.Assign(req)
		if err == nil {
			t.Fatalf("%+v joined another namespace's address", req)
		}
		if msg := err.Error(); strings.Contains(msg, "secret-name") || strings.Contains(msg, "x/") {
			t.Errorf("the refusal names the other Service: %s", msg)
		} else if !strings.Contains(msg, "another namespace") {
			t.Errorf("the refusal does not say why: %s", msg)
		}
	}
	// in its own namespace, the Service in the way is named
	assignFails(t, a, svc("x/b", sharing("k")), PoolExhausted, "Service x/secret-name: both use TCP/80")
}

// TestWithdrawnConsentMovesNobody: a pool that stops letting namespaces
// share keeps the Services already sharing where they are (a pool's edit
// moves no assignment); it stops new joins. A restart restores them too.
func TestWithdrawnConsentMovesNobody(t *testing.T) {
	a := newAlloc(t, pool("p", "198.51.100.0/28", shareAcross("x", "y")))
	mustAssign(t, a, svc("x/a", sharing("k")))
	wantAssignment(t, mustAssign(t, a, svc("y/b", sharing("k"), ports("UDP/53"))), "p", "198.51.100.0")
	if err := a.SetPools([]Pool{pool("p", "198.51.100.0/28")}); err != nil {
		t.Fatal(err)
	}
	wantAssignment(t, mustAssign(t, a, svc("y/b", sharing("k"), ports("UDP/53", "UDP/54"))), "p", "198.51.100.0")
	wantAssignment(t, mustAssign(t, a, svc("x/a", sharing("k"))), "p", "198.51.100.0")
	wantAssignment(t, mustAssign(t, a, svc("z/c", sharing("k"), ports("UDP/55"))), "p", "198.51.100.1")

	r := newAlloc(t, pool("p", "198.51.100.0/28"))
	for _, req := range []service.Request{svc("x/a", sharing("k")), svc("y/b", sharing("k"), ports("UDP/53"))} {
		if err := r.Restore(req, "p", addrs("198.51.100.0")); err != nil {
			t.Fatalf("restore %s: %v", req.Key, err)
		}
	}
	checkBook(t, r)
}

// TestTheFirstHolderNeverMoves: when a Service sharing an address changes
// its ports so that they clash with a Service that joined after it, the
// first keeps the address and the later one is displaced: it moves on
// its next Assign, unchanged request and all.
func TestTheFirstHolderNeverMoves(t *testing.T) {
	for _, c := range []struct {
		name, first, joiner string
		opts                []any
	}{
		{"one namespace", "x/a", "x/b", nil},
		{"two namespaces with consent", "x/a", "y/b", []any{shareAcross("x", "y")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newAlloc(t, pool("p", append([]any{"198.51.100.0/28"}, c.opts...)...))
			wantAssignment(t, mustAssign(t, a, svc(c.first, sharing("k"))), "p", "198.51.100.0")
			joiner := svc(c.joiner, sharing("k"), ports("UDP/53"))
			wantAssignment(t, mustAssign(t, a, joiner), "p", "198.51.100.0")

			got := mustAssign(t, a, svc(c.first, sharing("k"), ports("TCP/80", "UDP/53")))
			wantAssignment(t, got, "p", "198.51.100.0")
			if len(got.Displaced) != 1 || got.Displaced[0] != c.joiner {
				t.Fatalf("displaced %v, want [%s]", got.Displaced, c.joiner)
			}
			checkBook(t, a)
			wantAssignment(t, mustAssign(t, a, joiner), "p", "198.51.100.1")
			checkBook(t, a)
			again := mustAssign(t, a, svc(c.first, sharing("k"), ports("TCP/80", "UDP/53")))
			if len(again.Displaced) != 0 {
				t.Errorf("displaced again: %v", again.Displaced)
			}
		})
	}
}
