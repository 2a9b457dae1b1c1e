package routerconf

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func labConfig() Config {
	return Config{
		RouterID: netip.MustParseAddr("198.51.100.1"), ASN: 64512, PeerASN: 64513,
		ListenRanges: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/25"), netip.MustParsePrefix("2001:db8:1::/64")},
		BFD:          BFD{TransmitMS: 300, ReceiveMS: 300, Multiplier: 3}, HoldTime: 9, Keepalive: 3, MaxPaths: 8,
		LogFile: "/run/herald-lab/test/bird/bird.log",
	}
}

func withStatic() Config {
	c := labConfig()
	// given out of order: the output is sorted
	c.Neighbors = []Neighbor{
		{Address: netip.MustParseAddr("198.51.100.13"), Password: "s3cret", Active: true},
		{Address: netip.MustParseAddr("198.51.100.12"), BFD: true},
		{Address: netip.MustParseAddr("2001:db8:1::12"), BFD: true, ASN: 64600},
	}
	return c
}

func withInterfaces() Config {
	c := labConfig()
	c.Interfaces = []string{"p2p-node1", "p2p-node2"}
	return c
}

func withInterfaceBFD() Config {
	c := withInterfaces()
	c.InterfaceBFD = true
	c.BFD = BFD{TransmitMS: 100, ReceiveMS: 100, Multiplier: 3}
	return c
}

func TestRenderGolden(t *testing.T) {
	cases := []struct {
		name   string
		render func(Config) (string, error)
		cfg    Config
	}{
		{"frr-ranges.conf", RenderFRR, labConfig()},
		{"frr-static.conf", RenderFRR, withStatic()},
		{"frr-unnumbered.conf", RenderFRR, withInterfaces()},
		{"frr-unnumbered-bfd.conf", RenderFRR, withInterfaceBFD()},
		{"bird-ranges.conf", RenderBIRD, labConfig()},
		{"bird-static.conf", RenderBIRD, withStatic()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.render(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.name)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", c.name, got)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	bad := map[string]func(*Config){
		"interface with a space": func(c *Config) { c.Interfaces = []string{"p2p node1"} },
		"interface too long":     func(c *Config) { c.Interfaces = []string{"averyveryverylongname"} },
		"no router ID":           func(c *Config) { c.RouterID = netip.Addr{} },
		"IPv6 router ID":         func(c *Config) { c.RouterID = netip.MustParseAddr("2001:db8::1") },
		"no ASN":                 func(c *Config) { c.ASN = 0 },
		"keepalive too long":     func(c *Config) { c.Keepalive = 4 },
		"no BFD multiplier":      func(c *Config) { c.BFD.Multiplier = 0 },
		"password with space": func(c *Config) {
			c.Neighbors = []Neighbor{{Address: netip.MustParseAddr("198.51.100.12"), Password: "a b"}}
		},
		"duplicate neighbor": func(c *Config) {
			n := Neighbor{Address: netip.MustParseAddr("198.51.100.12")}
			c.Neighbors = []Neighbor{n, n}
		},
	}
	for name, change := range bad {
		c := labConfig()
		change(&c)
		if _, err := RenderFRR(c); err == nil {
			t.Errorf("%s: FRR rendered", name)
		}
		if _, err := RenderBIRD(c); err == nil {
			t.Errorf("%s: BIRD rendered", name)
		}
	}
	if err := withStatic().Validate(); err != nil {
		t.Error(err)
	}
}

func TestRenderBFDOnlyWhenUsed(t *testing.T) {
	text, err := RenderBIRD(labConfig())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "protocol bfd") {
		t.Error("BIRD config has a BFD protocol without any BFD session")
	}
}
