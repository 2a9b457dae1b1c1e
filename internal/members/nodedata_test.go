package members

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/test/labkit"
)

// TestNodeDataIsPublished: each member's data reaches the others with its
// metadata, is remembered after it dies, and is forgotten with it (Retain);
// a member that publishes none (an older speaker) has none, and its
// leaving flag still reads.
func TestNodeDataIsPublished(t *testing.T) {
	withData := func(d string) memberOption { return func(c *Config) { c.NodeData = []byte(d) } }
	a := startMember(t, "node-a", withData("aaaaaa"))
	b := startMember(t, "node-b", withData("bbbbbbcccccc"))
	c := startMember(t, "node-c")
	addrs := []string{a.addr(), b.addr(), c.addr()}
	for _, m := range []*testMember{a, b, c} {
		m.Join(addrs)
	}
	for _, name := range []string{"node-b", "node-c"} {
		waitState(t, a, name, Alive, 10*time.Second)
	}
	if got := a.NodeData("node-b"); string(got) != "bbbbbbcccccc" {
		t.Errorf("node-b's data seen by node-a: %q", got)
	}
	if got := a.NodeData("node-a"); string(got) != "aaaaaa" {
		t.Errorf("node-a's own data: %q", got)
	}
	if got := a.NodeData("node-c"); got != nil {
		t.Errorf("node-c published nothing, node-a sees %q", got)
	}
	labkit.Eventually(t, 10*time.Second, "node-c to see node-b's data", func() bool {
		return bytes.Equal(c.NodeData("node-b"), []byte("bbbbbbcccccc"))
	})
	if err := b.Shutdown(); err != nil {
		t.Fatal(err)
	}
	waitState(t, a, "node-b", Dead, 10*time.Second)
	if got := a.NodeData("node-b"); string(got) != "bbbbbbcccccc" {
		t.Errorf("node-b's data after its death: %q", got)
	}
	a.Retain([]string{"node-a", "node-c"})
	if got := a.NodeData("node-b"); got != nil {
		t.Errorf("node-b's data after its Node was deleted: %q", got)
	}
	if err := c.Leave(leaveCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitState(t, a, "node-c", Left, 10*time.Second)
}

// TestNodeDataLimit: data that would not fit memberlist's metadata is
// refused at New.
func TestNodeDataLimit(t *testing.T) {
	cfg := Config{NodeName: "n", SecretKey: testKey(), NodeData: make([]byte, MaxNodeData+1)}
	if err := cfg.withDefaults().validate(); err == nil || !strings.Contains(err.Error(), "NodeData") {
		t.Errorf("validate: %v, want an error about NodeData", err)
	}
	cfg.NodeData = cfg.NodeData[:MaxNodeData]
	if err := cfg.withDefaults().validate(); err != nil {
		t.Errorf("validate with %d bytes: %v", MaxNodeData, err)
	}
}
