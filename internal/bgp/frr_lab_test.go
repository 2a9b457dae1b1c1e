package bgp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The FRR lab: three network namespaces created by the test, named with the
// test process's PID:
//
//	speaker ns  eth0 198.51.100.11/24, .12/24, 2001:db8:1::11/64
//	      |
//	switch ns   br0 (so that a link going down on the speaker side does
//	      |     not take the router's carrier down: BFD must notice)
//	router ns   eth0 198.51.100.1/24, .2/24, 2001:db8:1::1/64; FRR zebra, bgpd, bfdd
//
// The speaker runs in a child test process started with `ip netns exec` in
// the speaker namespace (a Go process cannot move all its threads to
// another network namespace). Nothing touches the root namespace.

const frrEnv = "HERALD_BGP_FRR_LAB"

// frrLab is what the child needs to know, passed as JSON in frrEnv.
type frrLab struct {
	VtyDir string // vtysh --vty_socket
}

const frrConf = `frr defaults datacenter
hostname herald-bgp-test-router
log file %[1]s/frr.log
!
bfd
 profile fast
  detect-multiplier 3
  receive-interval 100
  transmit-interval 100
 exit
exit
!
router bgp 64513
 bgp router-id 198.51.100.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 198.51.100.11 remote-as 64512
 neighbor 198.51.100.11 bfd
 neighbor 198.51.100.11 bfd profile fast
 neighbor 198.51.100.12 remote-as 64512
 neighbor 198.51.100.12 password herald-secret
 address-family ipv4 unicast
  neighbor 198.51.100.11 activate
  neighbor 198.51.100.12 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor 198.51.100.11 activate
 exit-address-family
exit
`

func TestFRR(t *testing.T) {
	if os.Getenv(frrEnv) != "" {
		t.Skip("in the child process")
	}
	if testing.Short() {
		t.Skip("FRR lab skipped in -short mode")
	}
	requireLab(t)
	pid := os.Getpid()
	ns := func(role string) string { return fmt.Sprintf("hbgp%d-%s", pid, role) }
	spk, sw, rtr := ns("spk"), ns("sw"), ns("rtr")
	for _, n := range []string{spk, sw, rtr} {
		addNetns(t, n)
	}
	buildTopology(t, spk, sw, rtr)
	dir := startFRR(t, rtr, fmt.Sprintf("/run/hbgp%d-frr", pid))
	runChild(t, spk, frrLab{VtyDir: dir})
}

// requireLab skips unless the test runs as root with iproute2 and FRR.
func requireLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("FRR lab needs root (network namespaces)")
	}
	for _, f := range []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "/usr/bin/vtysh"} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("FRR lab needs Debian's frr package: %v", err)
		}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("FRR lab needs iproute2's ip")
	}
}

func addNetns(t *testing.T, name string) {
	t.Helper()
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { removeNetns(t, name) })
	sh(t, "ip", "-n", name, "link", "set", "lo", "up")
}

// removeNetns stops what still runs in a namespace (by PID) and deletes it.
func removeNetns(t *testing.T, name string) {
	out, _ := exec.Command("ip", "netns", "pids", name).Output()
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			stopPID(pid)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Errorf("delete netns %s: %v: %s", name, err, out)
	}
}

func buildTopology(t *testing.T, spk, sw, rtr string) {
	t.Helper()
	sh(t, "ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	sh(t, "ip", "-n", sw, "link", "set", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
	sh(t, "ip", "-n", sw, "link", "set", "br0", "up")
	for _, host := range []struct{ ns, port string }{{spk, "p-spk"}, {rtr, "p-rtr"}} {
		sh(t, "ip", "-n", host.ns, "link", "add", "eth0", "type", "veth", "peer", "name", host.port, "netns", sw)
		sh(t, "ip", "-n", sw, "link", "set", host.port, "master", "br0", "up")
		sh(t, "ip", "netns", "exec", host.ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0",
			"net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.keep_addr_on_down=1")
	}
	addrs := map[string][]string{
		spk: {"198.51.100.11/24", "198.51.100.12/24", "2001:db8:1::11/64"},
		rtr: {"198.51.100.1/24", "198.51.100.2/24", "2001:db8:1::1/64"},
	}
	for _, n := range []string{spk, rtr} {
		for _, a := range addrs[n] {
			args := []string{"-n", n, "addr", "add", a, "dev", "eth0"}
			if strings.Contains(a, ":") {
				args = append(args, "nodad")
			}
			sh(t, "ip", args...)
		}
		sh(t, "ip", "-n", n, "link", "set", "eth0", "up")
	}
}

// startFRR runs zebra, bfdd and bgpd in the router namespace with their
// state under dir (reachable by user frr), and pushes the configuration.
func startFRR(t *testing.T, ns, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopFRR(t, dir) })
	must(t, os.WriteFile(filepath.Join(dir, "frr.conf"), []byte(fmt.Sprintf(frrConf, dir)), 0o640))
	must(t, os.WriteFile(filepath.Join(dir, "vtysh.conf"), nil, 0o640))
	sh(t, "chown", "-R", "frr:frr", dir)
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		args := []string{"netns", "exec", ns, "/usr/lib/frr/" + d, "-d", "-F", "datacenter", "-u", "frr", "-g", "frr",
			"--vty_socket", dir, "-z", dir + "/zserv.api", "-i", dir + "/" + d + ".pid", "-P", "0",
			"--log", "file:" + dir + "/" + d + ".log", "-f", "/dev/null"}
		if d == "bfdd" {
			args = append(args, "--bfdctl", dir+"/bfdd.sock")
		}
		sh(t, "ip", args...)
	}
	eventually(t, 20*time.Second, "FRR daemons answer", func() (bool, string) {
		out, err := exec.Command("vtysh", "--vty_socket", dir, "-c", "show daemons").CombinedOutput()
		s := string(out)
		return err == nil && strings.Contains(s, "bgpd") && strings.Contains(s, "bfdd") && strings.Contains(s, "zebra"), s
	})
	sh(t, "vtysh", "--vty_socket", dir, "--config_dir", dir, "-b")
	return dir
}

// stopFRR stops the daemons by the PIDs in their pid files, then removes
// the state directory.
func stopFRR(t *testing.T, dir string) {
	for _, d := range []string{"bgpd", "bfdd", "zebra"} {
		b, err := os.ReadFile(filepath.Join(dir, d+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			stopPID(pid)
		}
	}
	if t.Failed() {
		if b, err := os.ReadFile(filepath.Join(dir, "frr.log")); err == nil {
			t.Logf("frr.log:\n%s", tail(string(b), 60))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}

// stopPID sends SIGTERM, waits up to 5 s for the process to go, then
// sends SIGKILL.
func stopPID(pid int) {
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			return // a zombie: gone, its parent reaps it
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// runChild runs TestFRRSpeakerSide in the speaker namespace and relays its
// output.
func runChild(t *testing.T, ns string, lab frrLab) {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	env, err := json.Marshal(lab)
	must(t, err)
	args := []string{"netns", "exec", ns, exe, "-test.run=^TestFRRSpeakerSide$", "-test.v", "-test.count=1", "-test.timeout=4m"}
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), frrEnv+"="+string(env))
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = cmd.Stdout
	must(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			stopPID(cmd.Process.Pid)
			_ = cmd.Wait()
		}
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("speaker-side test in %s: %v", ns, err)
	}
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
