package members

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The lab test runs each member as its own process inside its own network
// namespace by re-executing the test binary there
// (ip netns exec <ns> <test binary> -test.run=^TestMembersHelperProcess$).
// The helper reports every state it sees on stdout as
// "MEMBERS <node> <state> <unix nanoseconds when it entered it>", and ends
// when its stdin closes.

const (
	helperEnv       = "HERALD_MEMBERS_HELPER" // this process's node name
	helperAddrEnv   = "HERALD_MEMBERS_ADDR"   // bind and advertise address
	helperJoinEnv   = "HERALD_MEMBERS_JOIN"   // comma-separated addresses
	helperKeyEnv    = "HERALD_MEMBERS_KEY"    // hex
	helperRejoinEnv = "HERALD_MEMBERS_REJOIN" // Timing.RejoinInterval
	helperPort      = 7946
	helperLinePfx   = "MEMBERS "
)

// TestMembersHelperProcess is not a test: it is the body of the helper
// processes of the lab test, and returns at once otherwise.
func TestMembersHelperProcess(t *testing.T) {
	name := os.Getenv(helperEnv)
	if name == "" {
		return
	}
	if err := runHelper(name); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		t.Fail()
	}
}

func runHelper(name string) error {
	key, err := hex.DecodeString(os.Getenv(helperKeyEnv))
	if err != nil {
		return err
	}
	timing := DefaultTiming()
	if timing.RejoinInterval, err = time.ParseDuration(os.Getenv(helperRejoinEnv)); err != nil {
		return err
	}
	rep := &reporter{seen: map[string]State{}}
	m, err := New(Config{
		NodeName: name, BindAddr: os.Getenv(helperAddrEnv), BindPort: helperPort,
		AdvertiseAddr: os.Getenv(helperAddrEnv), SecretKey: key, Timing: timing,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OnChange: rep.changed,
	})
	if err != nil {
		return err
	}
	rep.m.Store(m)
	rep.changed()
	m.Join(strings.Split(os.Getenv(helperJoinEnv), ","))
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
	return m.Shutdown()
}

// reporter prints each node whose state changed since the last call.
type reporter struct {
	m    atomic.Pointer[Members]
	mu   sync.Mutex
	seen map[string]State
}

func (r *reporter) changed() {
	m := r.m.Load()
	if m == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := m.Snapshot()
	names := make([]string, 0, len(snap))
	for n := range snap {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if r.seen[n] != snap[n] {
			r.seen[n] = snap[n]
			fmt.Printf("%s%s %s %d\n", helperLinePfx, n, snap[n], m.book.since(n).UnixNano())
		}
	}
}

// observation is what one helper last reported about one node.
type observation struct {
	state State
	since time.Time
}

// observer collects the helpers' reports: observer → node → observation.
type observer struct {
	mu   sync.Mutex
	seen map[string]map[string]observation
}

func (o *observer) read(helper string, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(sc.Text(), helperLinePfx))
		if !strings.HasPrefix(sc.Text(), helperLinePfx) || len(f) != 3 {
			continue
		}
		nanos, _ := strconv.ParseInt(f[2], 10, 64)
		o.mu.Lock()
		if o.seen[helper] == nil {
			o.seen[helper] = map[string]observation{}
		}
		o.seen[helper][f[0]] = observation{state: parseState(f[1]), since: time.Unix(0, nanos)}
		o.mu.Unlock()
	}
}

func (o *observer) get(helper, node string) observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[helper][node]
}

func parseState(s string) State {
	for _, st := range knownStates() {
		if st.String() == s {
			return st
		}
	}
	return Unknown
}
