package migrate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/convert")

// convertCase is one MetalLB example configuration and the report entries
// it must produce: "severity object field" (field may be empty).
type convertCase struct {
	name  string
	lossy bool
	want  []string
}

func convertCases() []convertCase {
	const ns = "metallb-system/"
	return []convertCase{
		{name: "l2-basic", want: []string{"changed L2Advertisement " + ns + "example spec.interfaces"}},
		{name: "l2-interfaces-selectors"},
		{name: "bgp-basic"},
		{name: "bgp-communities", lossy: true, want: []string{
			"note Community " + ns + "communities spec.communities[1].name",
			"changed BGPAdvertisement " + ns + "external spec.localPref",
			"dropped BGPAdvertisement " + ns + "external spec.communities[0]",
		}},
		{name: "peers-bfd", lossy: true, want: []string{
			"dropped BFDProfile " + ns + "full spec.echoMode",
			"dropped BFDProfile " + ns + "full spec.echoInterval",
			"dropped BFDProfile " + ns + "full spec.passiveMode",
			"dropped BFDProfile " + ns + "full spec.minimumTtl",
			"note BGPPeer " + ns + "rack2 spec.passwordSecret",
			"changed BGPPeer " + ns + "rack2 spec.routerID",
			"dropped BGPPeer " + ns + "rack3 spec.ebgpMultiHop",
			"dropped BGPPeer " + ns + "rack3 spec.holdTime",
			"dropped BGPPeer " + ns + "rack3 spec.keepaliveTime",
		}},
		{name: "pools-priorities", lossy: true, want: []string{
			"changed IPAddressPool " + ns + "bronze spec.serviceAllocation.priority",
			"changed IPAddressPool " + ns + "gold spec.serviceAllocation.priority",
			"changed IPAddressPool " + ns + "silver spec.serviceAllocation.priority",
			"note IPAddressPool " + ns + "silver spec.addresses[0]",
			"note IPAddressPool " + ns + "silver spec.addresses[1]",
			"dropped IPAddressPool " + ns + "broken spec.addresses[0]",
			"dropped IPAddressPool " + ns + "broken spec.addresses[1]",
			"dropped IPAddressPool " + ns + "broken",
		}},
		{name: "ipv6", lossy: true, want: []string{"dropped BGPPeer " + ns + "v6-router spec.sourceAddress"}},
		{name: "dual-stack", want: []string{
			"changed L2Advertisement " + ns + "dual spec.interfaces",
		}},
		{name: "bgp-local-asn", lossy: true, want: []string{
			"note BGPPeer " + ns + "local-as spec.localASN",
			"note BGPPeer " + ns + "local-as-dynamic spec.localASN",
			"dropped BGPPeer " + ns + "local-as-ibgp",
			"dropped BGPPeer " + ns + "local-as-is-peer-as",
		}},
		{name: "unsupported", lossy: true, want: []string{
			"dropped IPAddressPool " + ns + "future spec.someFutureField",
			"dropped FRRConfiguration " + ns + "receive-all",
			"dropped ConfigMap " + ns + "bgpextras",
			"note ServiceL2Status " + ns + "l2-abcde",
		}},
		{name: "bgp-unnumbered", lossy: true, want: []string{
			"dropped BGPPeer " + ns + "leaf-multihop spec.ebgpMultiHop",
			"dropped BGPPeer " + ns + "leaf-source spec.sourceAddress",
			"dropped BGPPeer " + ns + "both",
			"dropped BGPPeer " + ns + "bad-name",
			"dropped BGPPeer " + ns + "in-vrf",
		}},
		{name: "bgp-dynamic-asn", lossy: true, want: []string{
			"changed BGPPeer " + ns + "dynamic-internal spec.connectTime",
			"note BGPPeer " + ns + "dynamic-internal spec.disableMP",
			"dropped BGPPeer " + ns + "dynamic-internal-multihop spec.ebgpMultiHop",
		}},
		{name: "bgp-vrf", lossy: true, want: []string{
			"dropped BGPPeer " + ns + "vrf-bfd spec.bfdProfile",
			"dropped BGPPeer " + ns + "vrf-bad-name",
		}},
		{name: "namespaces", want: []string{
			"note IPAddressPool metallb-b/default metadata.name",
			"note IPAddressPool " + ns + "default metadata.name",
			"note BGPPeer metallb-b/tor metadata.name",
			"note BGPPeer " + ns + "tor metadata.name",
		}},
	}
}

// convertFile converts one example.
func convertFile(t *testing.T, name string) Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "convert", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var src Source
	if err := src.AddYAML(name, data); err != nil {
		t.Fatal(err)
	}
	return Convert(&src, Options{})
}

// render is the golden form of a result: the report, then the objects.
func render(t *testing.T, res Result) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# report\n")
	if err := res.Report.Write(&b); err != nil {
		t.Fatal(err)
	}
	b.WriteString("# objects\n")
	if err := WriteYAML(&b, res.Objects); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestConvertGolden(t *testing.T) {
	for _, c := range convertCases() {
		t.Run(c.name, func(t *testing.T) {
			res := convertFile(t, c.name)
			got := render(t, res)
			golden := filepath.Join("testdata", "convert", c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run go test -update and review the diff)\n%s", golden, got)
			}
			if res.Report.Lossy() != c.lossy {
				t.Errorf("Lossy = %v, want %v", res.Report.Lossy(), c.lossy)
			}
			have := map[string]bool{}
			for _, e := range res.Report.Entries {
				have[strings.TrimSpace(string(e.Severity)+" "+e.Object+" "+e.Field)] = true
			}
			for _, w := range c.want {
				if !have[w] {
					t.Errorf("report lacks %q; it has:\n%s", w, strings.Join(keys(have), "\n"))
				}
			}
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
