package installation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/herald-lb/herald/api/v1beta1"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		ok   bool
		want string // in the error
	}{
		{"", true, ""},
		{"blue", true, ""},
		{"team-b2", true, ""},
		{strings.Repeat("a", MaxLen), true, ""},
		{strings.Repeat("a", MaxLen+1), false, "at most 40"},
		{"Blue", false, "--installation \"Blue\""},
		{"a.b", false, "--installation"},
		{"-a", false, "--installation"},
		{"a_b", false, "--installation"},
	} {
		got, err := Parse(c.in)
		if c.ok {
			if err != nil || string(got) != c.in {
				t.Errorf("Parse(%q) = %q, %v", c.in, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

// TestSelectorMatchesOwns: the label selector the informers list with and
// Owns agree on every kind of labels, and each object belongs to exactly
// one installation.
func TestSelectorMatchesOwns(t *testing.T) {
	names := []Name{"", "blue", "green"}
	for _, ls := range []map[string]string{
		nil,
		{"app": "x"},
		{v1beta1.LabelInstallation: "blue"},
		{v1beta1.LabelInstallation: "green", "app": "x"},
		{v1beta1.LabelInstallation: ""},
		{v1beta1.LabelInstallation: "other"},
	} {
		owners := 0
		for _, n := range names {
			sel, err := labels.Parse(n.Selector())
			if err != nil {
				t.Fatalf("%q: selector %q: %v", n, n.Selector(), err)
			}
			if got, want := sel.Matches(labels.Set(ls)), n.Owns(ls); got != want {
				t.Errorf("%q, labels %v: selector %q matches %v, Owns %v", n, ls, n.Selector(), got, want)
			}
			if n.Owns(ls) {
				owners++
			}
		}
		if owners > 1 {
			t.Errorf("labels %v: %d installations own it", ls, owners)
		}
	}
}

// TestLabelsAreOwned: what an installation labels its objects with, it
// owns, and no other installation does.
func TestLabelsAreOwned(t *testing.T) {
	for _, n := range []Name{"", "blue"} {
		for _, m := range []Name{"", "blue", "green"} {
			if got := m.Owns(n.Labels()); got != (m == n) {
				t.Errorf("%q owns %q's labels %v: %v", m, n, n.Labels(), got)
			}
		}
	}
}

func TestSpeakerStatusName(t *testing.T) {
	long := strings.Repeat("n", 253-len(".blue"))
	for _, c := range []struct {
		n          Name
		node, want string
		ok         bool
	}{
		{"", "node1", "node1", true},
		{"", "node1.example.com", "node1.example.com", true},
		{"blue", "node1", "node1.blue", true},
		{"blue", "node1.example.com", "node1.example.com.blue", true},
		{"blue", long, long + ".blue", true},
		{"blue", long + "n", "", false},
	} {
		got, err := c.n.SpeakerStatus(c.node)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q.SpeakerStatus(%.20s) = %.30q, %v", c.n, c.node, got, err)
			continue
		}
		if !c.ok {
			if !strings.Contains(err.Error(), "--installation") {
				t.Errorf("error %v does not name --installation", err)
			}
			continue
		}
		if node, ok := c.n.Node(got); !ok || node != c.node {
			t.Errorf("%q.Node(%.30q) = %.20q, %v; want %.20q", c.n, got, node, ok, c.node)
		}
	}
}

func TestNodeOfOthers(t *testing.T) {
	for _, c := range []struct {
		n          Name
		name, node string
		ok         bool
	}{
		{"blue", "node1", "", false},
		{"blue", ".blue", "", false},
		{"blue", "node1.green", "", false},
		{"blue", "node1xblue", "", false},
		{"blue", "node1.blue", "node1", true},
		{"", "node1.blue", "node1.blue", true},
		{"", "", "", false},
	} {
		if node, ok := c.n.Node(c.name); node != c.node || ok != c.ok {
			t.Errorf("%q.Node(%q) = %q, %v; want %q, %v", c.n, c.name, node, ok, c.node, c.ok)
		}
	}
}

func TestWriter(t *testing.T) {
	if got := Name("").Writer("herald-controller"); got != "herald-controller" {
		t.Errorf("default writer %q", got)
	}
	if got := Name("blue").Writer("herald-controller"); got != "herald-controller-blue" {
		t.Errorf("blue writer %q", got)
	}
}
