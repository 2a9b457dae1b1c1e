package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-lb/herald/internal/members"
)

func TestTimingPresetAndOverrides(t *testing.T) {
	f, err := parseFlags([]string{"--node-name=n1", "--memberlist-timing=large", "--memberlist-probe-interval=150ms"})
	if err != nil {
		t.Fatal(err)
	}
	got, want := f.timing(), members.LargeClusterTiming()
	want.ProbeInterval = 150 * time.Millisecond
	if got != want {
		t.Errorf("timing %+v, want %+v", got, want)
	}
	f, _ = parseFlags([]string{"--node-name=n1"})
	if f.timing() != members.DefaultTiming() {
		t.Error("default timing")
	}
	f, _ = parseFlags([]string{"--node-name=n1", "--memberlist-timing=large-fast"})
	if f.timing() != members.FastLargeClusterTiming() {
		t.Error("large-fast timing")
	}
	if _, err := parseFlags([]string{"--node-name=n1", "--memberlist-timing=huge"}); err == nil || !strings.Contains(err.Error(), "--memberlist-timing") {
		t.Errorf("unknown preset: %v, want an error naming the flag", err)
	}
}

func TestExcludeInterfaces(t *testing.T) {
	f, _ := parseFlags([]string{"--node-name=n1", "--l2-exclude-interfaces=lo, veth* ,,"})
	if !slices.Equal(f.excluded(), []string{"lo", "veth*"}) {
		t.Errorf("excluded %v", f.excluded())
	}
	f, _ = parseFlags([]string{"--node-name=n1", "--l2-exclude-interfaces="})
	if got := f.excluded(); got == nil || len(got) != 0 {
		t.Errorf("an empty list must exclude nothing (not the defaults): %#v", got)
	}
}

func TestArgumentErrorIsPrinted(t *testing.T) {
	_, err := parseFlags([]string{"--node-name=n1", "stray"})
	var out bytes.Buffer
	if code := argExit(&out, err); code != 2 || !strings.Contains(out.String(), "speaker: ") || !strings.Contains(out.String(), "stray") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
	if f, err := parseFlags([]string{"--node-name=n1", "--lb-class=example.com/lb"}); err != nil || f.lbClass != "example.com/lb" {
		t.Errorf("--lb-class: %v %q", err, f.lbClass)
	}
}

func TestEndpointsListenOnTheHostIP(t *testing.T) {
	f, err := parseFlags([]string{"--node-name=n1", "--host-ip=198.51.100.11"})
	if err != nil || f.metricsAddr != "198.51.100.11:7472" || f.healthAddr != "198.51.100.11:7473" {
		t.Errorf("defaults with a host IP: %q %q %v", f.metricsAddr, f.healthAddr, err)
	}
	cases := []struct{ addr, hostIP, want string }{
		{":7472", "2001:db8::11", "[2001:db8::11]:7472"},
		{":7472", "", ":7472"},
		{"0.0.0.0:7472", "198.51.100.11", "0.0.0.0:7472"},
		{"[::]:7472", "198.51.100.11", "[::]:7472"},
		{"127.0.0.1:9000", "198.51.100.11", "127.0.0.1:9000"},
		{"", "198.51.100.11", ""},
	}
	for _, c := range cases {
		got, err := onHost(c.addr, c.hostIP)
		if err != nil || got != c.want {
			t.Errorf("onHost(%q, %q) = %q, %v; want %q", c.addr, c.hostIP, got, err, c.want)
		}
	}
	if _, err := parseFlags([]string{"--node-name=n1", "--host-ip=node1"}); err == nil || !strings.Contains(err.Error(), "--host-ip") {
		t.Errorf("a host IP that is no address: %v, want an error naming --host-ip", err)
	}
	if _, err := parseFlags([]string{"--node-name=n1", "--health-addr=7473"}); err == nil || !strings.Contains(err.Error(), "--health-addr") {
		t.Errorf("an address without a port: %v, want an error naming --health-addr", err)
	}
	f, _ = parseFlags([]string{"--node-name=n1", "--host-ip=198.51.100.11", "--metrics-addr="})
	if f.metricsAddr != "" {
		t.Errorf("a disabled endpoint stays disabled: %q", f.metricsAddr)
	}
}

func TestBGPListenFlags(t *testing.T) {
	f, err := parseFlags([]string{"--node-name=n1"})
	if err != nil || f.bgpListenPort != 179 || f.bgpListen != nil {
		t.Errorf("defaults: port %d addresses %v (%v)", f.bgpListenPort, f.bgpListen, err)
	}
	f, err = parseFlags([]string{"--node-name=n1", "--bgp-listen-port=1179", "--bgp-listen-addresses=127.0.0.1, ::1"})
	if err != nil || f.bgpListenPort != 1179 || len(f.bgpListen) != 2 || f.bgpListen[1].String() != "::1" {
		t.Errorf("set: port %d addresses %v (%v)", f.bgpListenPort, f.bgpListen, err)
	}
	for _, bad := range []string{"--bgp-listen-port=0", "--bgp-listen-port=70000", "--bgp-listen-addresses=node"} {
		if _, err := parseFlags([]string{"--node-name=n1", bad}); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("%s: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestInstallationFlag(t *testing.T) {
	if f, err := parseFlags([]string{"--node-name=n1", "--installation=blue"}); err != nil || f.installation != "blue" {
		t.Errorf("--installation=blue: %v %q", err, f.installation)
	}
	if _, err := parseFlags([]string{"--node-name=n1", "--installation=Blue"}); err == nil || !strings.Contains(err.Error(), "--installation") {
		t.Errorf("--installation=Blue: %v, want an error naming the flag", err)
	}
}
