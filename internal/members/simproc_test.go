package members

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The simulation's members live in child processes, each a re-executed
// test binary (TestMemberListSimHelper) running a share of them, as a
// real cluster runs each speaker in its own process with its own garbage
// collector: in one process, every collection stalled all 200 members at
// once. The parent drives the children over their standard input, one
// command a line, and each child answers every command with one line on
// its standard output:
//
//	(at start)            ADDRS <name>=<addr> ...
//	JOIN <name> <seeds>   OK        the member joins the comma-separated seeds
//	ALIVE                 ALIVE <n> the fewest members any of its live members sees Alive
//	VICTIM <name>         OK        name is about to be killed: its death is not false
//	KILL <name>           KILLED <unix ns>  shut down without leaving, as SIGKILL
//	DEAD <name>           DEAD <unix ns>... when each live member saw it Dead, or NOTYET
//	STATS                 STATS <false deaths> <suspicions> <the first false deaths, ;-separated>
//
// and shuts its members down when its standard input closes.

const (
	simHelperEnv   = "HERALD_SIM_HELPER_NAMES" // the child's members, comma-separated
	simHelperTimes = "HERALD_SIM_HELPER_TIMING"
)

// TestMemberListSimHelper is not a test: it is the body of the
// simulation's child processes, and returns at once otherwise.
func TestMemberListSimHelper(t *testing.T) {
	names := os.Getenv(simHelperEnv)
	if names == "" {
		return
	}
	var timing Timing
	if err := json.Unmarshal([]byte(os.Getenv(simHelperTimes)), &timing); err != nil {
		t.Fatalf("$%s: %v", simHelperTimes, err)
	}
	if err := serveSimChild(strings.Split(names, ","), timing, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sim helper:", err)
		t.Fail()
	}
}

// serveSimChild starts the named members and answers the parent's
// commands until in ends.
func serveSimChild(names []string, timing Timing, in io.Reader, out io.Writer) error {
	log := &simLog{killed: map[string]bool{}}
	live := make(map[string]*Members, len(names))
	defer func() { shutdownSim(mapValues(live)) }()
	addrs := make([]string, 0, len(names))
	for _, name := range names {
		m, err := New(Config{NodeName: name, BindAddr: "127.0.0.1", AdvertiseAddr: "127.0.0.1",
			SecretKey: testKey(), Logger: slog.New(log), Timing: timing})
		if err != nil {
			return fmt.Errorf("start member %s: %w", name, err)
		}
		live[name] = m
		addrs = append(addrs, name+"="+nodeAddrPort(m.ml.LocalNode()).String())
	}
	w := bufio.NewWriter(out)
	reply := func(format string, args ...any) error {
		fmt.Fprintf(w, format+"\n", args...)
		return w.Flush()
	}
	if err := reply("ADDRS %s", strings.Join(addrs, " ")); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var err error
		switch arg := strings.Join(f[1:], " "); f[0] {
		case "JOIN":
			name, seeds, _ := strings.Cut(arg, " ")
			live[name].Join(strings.Split(seeds, ","))
			err = reply("OK")
		case "ALIVE":
			least := len(names) * 1000
			for _, m := range live {
				least = min(least, m.book.counts()[Alive])
			}
			err = reply("ALIVE %d", least)
		case "VICTIM":
			log.kill(arg)
			err = reply("OK")
		case "KILL":
			m, crashed := live[arg], time.Now()
			delete(live, arg)
			if serr := m.Shutdown(); serr != nil {
				return fmt.Errorf("kill %s: %w", arg, serr)
			}
			err = reply("KILLED %d", crashed.UnixNano())
		case "DEAD":
			err = reply("%s", deadReply(live, arg))
		case "STATS":
			log.mu.Lock()
			first := log.falseDeaths[:min(10, len(log.falseDeaths))]
			err = reply("STATS %d %d %s", len(log.falseDeaths), log.suspicions, strings.Join(first, ";"))
			log.mu.Unlock()
		default:
			return fmt.Errorf("unknown command %q", sc.Text())
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// deadReply says when each live member saw victim enter Dead, or NOTYET.
func deadReply(live map[string]*Members, victim string) string {
	times := []string{"DEAD"}
	for _, m := range live {
		if m.State(victim) != Dead {
			return "NOTYET"
		}
		times = append(times, strconv.FormatInt(m.book.since(victim).UnixNano(), 10))
	}
	return strings.Join(times, " ")
}

func mapValues(m map[string]*Members) []*Members {
	out := make([]*Members, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// simChild is the parent's end of one child process.
type simChild struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	mu    sync.Mutex
	addrs map[string]string // member name → address
}

// startSimChildren starts procs children sharing names round-robin, each
// with GOMAXPROCS threads for Go code so that together they have as many
// as this machine has CPUs (the load around them is sized on that).
func startSimChildren(tb testing.TB, names []string, procs int, timing Timing) []*simChild {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	tj, err := json.Marshal(timing)
	if err != nil {
		tb.Fatal(err)
	}
	children := make([]*simChild, procs)
	for p := range children {
		var share []string
		for i := p; i < len(names); i += procs {
			share = append(share, names[i])
		}
		c := &simChild{cmd: exec.Command(exe, "-test.run=^TestMemberListSimHelper$")}
		c.cmd.Env = append(os.Environ(), simHelperEnv+"="+strings.Join(share, ","), simHelperTimes+"="+string(tj),
			"GOMAXPROCS="+strconv.Itoa(simChildProcs(procs)))
		c.cmd.Stderr = os.Stderr
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a crashed benchmark leaves nothing running
		if c.in, err = c.cmd.StdinPipe(); err != nil {
			tb.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		c.out = bufio.NewScanner(stdout)
		c.out.Buffer(nil, 1<<20)
		if err := c.cmd.Start(); err != nil {
			tb.Fatalf("start simulation child %d: %v", p, err)
		}
		tb.Cleanup(c.stop)
		children[p] = c
		addrs, ok := strings.CutPrefix(c.read(tb), "ADDRS ")
		if !ok {
			tb.Fatalf("simulation child %d did not report its addresses", p)
		}
		c.addrs = map[string]string{}
		for _, f := range strings.Fields(addrs) {
			name, addr, _ := strings.Cut(f, "=")
			c.addrs[name] = addr
		}
	}
	return children
}

// simChildProcs is each child's GOMAXPROCS: $HERALD_SIM_GOMAXPROCS, else
// this machine's CPUs shared out between the children.
func simChildProcs(procs int) int {
	return envInt("HERALD_SIM_GOMAXPROCS", max(1, runtime.NumCPU()/procs))
}

func (c *simChild) read(tb testing.TB) string {
	if !c.out.Scan() {
		tb.Fatalf("simulation child %d ended: %v", c.cmd.Process.Pid, c.out.Err())
	}
	return c.out.Text()
}

// call sends one command and returns the answer.
func (c *simChild) call(tb testing.TB, format string, args ...any) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		tb.Fatalf("simulation child %d: %v", c.cmd.Process.Pid, err)
	}
	return c.read(tb)
}

// stop closes the child's input, which shuts its members down, and kills
// it by PID if it has not exited 30 s later.
func (c *simChild) stop() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}
