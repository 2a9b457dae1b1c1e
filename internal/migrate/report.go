package migrate

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Severity says how much of a MetalLB field survived.
type Severity string

const (
	// Changed: translated, but the Herald field means something else, or
	// the value was changed to keep the meaning.
	Changed Severity = "changed"
	// Dropped: not translated (a field, an entry or a whole object); the
	// Herald configuration lacks it.
	Dropped Severity = "dropped"
	// Note: translated as is, but worth knowing (a rename, a value written
	// the way Herald requires, an ignored non-MetalLB object).
	Note Severity = "note"
)

// Entry is one line of the report.
type Entry struct {
	Severity Severity
	// Object is the MetalLB object: "BGPPeer metallb-system/tor".
	Object string
	// Field is the path in the MetalLB object ("spec.vrf"); empty for the
	// whole object.
	Field   string
	Message string
}

// SecretCopy is a Secret a BGPPeer's passwordSecret names: Herald reads it
// from its own namespace.
type SecretCopy struct {
	FromNamespace, FromName string
	ToNamespace, ToName     string
}

// Report is what the conversion did beyond copying.
type Report struct {
	Entries []Entry
	Secrets []SecretCopy
}

func (r *Report) add(sev Severity, obj, field, format string, args ...any) {
	r.Entries = append(r.Entries, Entry{Severity: sev, Object: obj, Field: field, Message: fmt.Sprintf(format, args...)})
}

// Lossy reports whether anything was dropped.
func (r *Report) Lossy() bool {
	for _, e := range r.Entries {
		if e.Severity == Dropped {
			return true
		}
	}
	return false
}

// Count returns how many entries have the severity.
func (r *Report) Count(sev Severity) int {
	n := 0
	for _, e := range r.Entries {
		if e.Severity == sev {
			n++
		}
	}
	return n
}

// sorted returns the entries dropped first, then changed, then notes, each
// by object and field.
func (r *Report) sorted() []Entry {
	rank := map[Severity]int{Dropped: 0, Changed: 1, Note: 2}
	out := append([]Entry(nil), r.Entries...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		return a.Field < b.Field
	})
	return out
}

// Write prints the report for a person: one line per entry, then the
// Secrets to copy with the commands that copy them.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MetalLB to Herald: %d dropped, %d changed meaning, %d notes\n", r.Count(Dropped), r.Count(Changed), r.Count(Note))
	for _, e := range r.sorted() {
		where := e.Object
		if e.Field != "" {
			where += " " + e.Field
		}
		fmt.Fprintf(&b, "%-8s %s: %s\n", strings.ToUpper(string(e.Severity)), where, e.Message)
	}
	if len(r.Secrets) > 0 {
		fmt.Fprintf(&b, "Copy these Secrets (key \"password\") before applying the BGPPeers:\n")
		for _, s := range r.Secrets {
			fmt.Fprintf(&b, "  %s/%s -> %s/%s:\n    %s\n", s.FromNamespace, s.FromName, s.ToNamespace, s.ToName, copySecretCommand(s))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// copySecretCommand is a shell command copying only the password key.
func copySecretCommand(s SecretCopy) string {
	return fmt.Sprintf("kubectl -n %s create secret generic %s --from-literal=password=\"$(kubectl -n %s get secret %s -o jsonpath='{.data.password}' | base64 -d)\"",
		s.ToNamespace, s.ToName, s.FromNamespace, s.FromName)
}
