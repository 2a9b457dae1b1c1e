package bgp

import (
	"bufio"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/e2e/lab"
)

// frrDebugLog makes FRR log received UPDATEs and neighbor state changes
// with microsecond timestamps into a file of the router's directory, for
// the rest of the test (the router is restarted with its configuration by
// the next reconfiguration; the debugs are turned off at the end).
func frrDebugLog(t *testing.T, l *lab.Lab) *frrLog {
	t.Helper()
	dir, ok := strings.CutPrefix(l.RouterShellHint(), "vtysh --vty_socket ")
	if !ok || l.RouterKind() != lab.FRR {
		t.Fatalf("not an FRR router: %q", l.RouterShellHint())
	}
	path := filepath.Join(dir, "e2e-debug.log")
	vtysh := func(cmds ...string) {
		argv := []string{"vtysh", "--vty_socket", dir}
		for _, c := range cmds {
			argv = append(argv, "-c", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := l.Exec(ctx, lab.Root, argv...); err != nil {
			t.Fatal(err)
		}
	}
	vtysh("debug bgp updates in", "debug bgp neighbor-events", "configure terminal",
		"log timestamp precision 6", "log file "+path+" debugging")
	t.Cleanup(func() {
		if l.RouterShellHint() == "vtysh --vty_socket "+dir {
			vtysh("no debug bgp updates in", "no debug bgp neighbor-events", "configure terminal", "no log file")
		}
	})
	return &frrLog{path: path}
}

type frrLog struct{ path string }

// first returns the time of the first line after since that matches re,
// and the line.
func (f *frrLog) first(since time.Time, re *regexp.Regexp) (time.Time, string, bool) {
	file, err := os.Open(f.path)
	if err != nil {
		return time.Time{}, "", false
	}
	defer file.Close()
	// FRR's timestamp comes first: 2026/11/29 13:40:01.123456
	frrTime := regexp.MustCompile(`^(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{6}) `)
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := frrTime.FindStringSubmatch(line)
		if m == nil || !re.MatchString(line) {
			continue
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000000", m[1], time.Local)
		if err != nil || at.Before(since) {
			continue
		}
		return at, line, true
	}
	return time.Time{}, "", false
}

// lines returns the log lines that mention every fragment (for failure
// messages).
func (f *frrLog) lines(fragments ...string) string {
	data, _ := os.ReadFile(f.path)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if lab.ContainsAll(line, fragments) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// withdrawn matches FRR's line for a withdrawal received from peer:
//
//	... BGP: [PAPP6-VDAWM] 198.51.100.12(vm) rcvd UPDATE about 198.51.100.128/32 IPv4 unicast -- withdrawn
func withdrawn(peer netip.Addr, prefix netip.Prefix) *regexp.Regexp {
	return regexp.MustCompile(`\] ` + regexp.QuoteMeta(peer.String()) + `(\(\S*\))? rcvd UPDATE about ` +
		regexp.QuoteMeta(prefix.String()) + ` .*-- withdrawn`)
}

// sessionClosing matches the first sign, in the order bgpd handles a
// peer's messages, of a session with peer ending: the FSM leaving
// Established, or the adjacency going down.
//
//	... 198.51.100.12 [FSM] Receive_NOTIFICATION_message (Established->Clearing), fd 19
//	... %ADJCHANGE: neighbor 198.51.100.12(vm) in vrf default Down Neighbor deleted
//
// Not "[Event] BGP connection closed fd 19": bgpd's I/O thread logs that
// when its read of the socket returns end of file, while the main thread
// may still be handling the UPDATEs that the same thread read before it
// (it logged the close 2.4 ms before the withdrawal that preceded it on
// the wire in an outside CI run). The main thread handles a peer's
// messages and its FSM events in order and takes an UPDATE only while
// Established, so its lines are the order the router saw.
func sessionClosing(peer netip.Addr) *regexp.Regexp {
	p := regexp.QuoteMeta(peer.String()) + `(\(\S*\))?`
	return regexp.MustCompile(`\] ` + p + ` \[FSM\] \S+ \(Established->|%ADJCHANGE: neighbor ` + p + ` .*Down`)
}
