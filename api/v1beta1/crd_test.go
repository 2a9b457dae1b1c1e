package v1beta1_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/herald-lb/herald/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// invalidCase is one object the API server must refuse, and a piece of the
// message that names the field.
type invalidCase struct {
	name, kind, spec, wantMsg string
}

func pool(spec string) (string, string)   { return "IPAddressPool", spec }
func peer(spec string) (string, string)   { return "BGPPeer", spec }
func bgpAdv(spec string) (string, string) { return "BGPAdvertisement", spec }
func l2Adv(spec string) (string, string)  { return "L2Advertisement", spec }
func bfd(spec string) (string, string)    { return "BFDProfile", spec }
func commAl(spec string) (string, string) { return "Community", spec }
func spk(status string) (string, string)  { return "SpeakerStatus", status }
func bad(name string, kindSpec func(string) (string, string), spec, want string) invalidCase {
	k, s := kindSpec(spec)
	return invalidCase{name: name, kind: k, spec: s, wantMsg: want}
}

const okPeer = "myASN: 64513\npeerASN: 64512\npeerAddress: 198.51.100.1\n"

func invalidCases() []invalidCase {
	return []invalidCase{
		bad("pool without addresses", pool, "addresses: []", "spec.addresses"),
		bad("pool address garbage", pool, "addresses: [not-an-address]", "spec.addresses: each entry must be a CIDR"),
		bad("pool address without prefix or range", pool, "addresses: [198.51.100.7]", "spec.addresses: each entry must be a CIDR"),
		bad("pool CIDR with host bits", pool, "addresses: [198.51.100.65/27]", "must not have host bits set"),
		bad("pool IPv6 CIDR with host bits", pool, "addresses: ['2001:db8::1/64']", "must not have host bits set"),
		bad("pool range of two families", pool, "addresses: ['198.51.100.10-2001:db8::1']", "both ends of a range must be of one IP family"),
		bad("pool range reversed", pool, "addresses: [198.51.100.20-198.51.100.10]", "first address of a range must not be above the last"),
		bad("pool range with three parts", pool, "addresses: [198.51.100.1-198.51.100.2-198.51.100.3]", "spec.addresses: each entry must be a CIDR"),
		bad("pool range with bad octet", pool, "addresses: [198.51.100.1-198.51.100.300]", "spec.addresses: each entry must be a CIDR"),
		bad("pool address too long", pool, "addresses: ['"+strings.Repeat("1", 100)+"']", "spec.addresses[0]"),
		bad("pool negative priority", pool, "addresses: [198.51.100.0/27]\nserviceAllocation: {priority: -1}", "spec.serviceAllocation.priority"),
		bad("pool bad namespace name", pool, "addresses: [198.51.100.0/27]\nserviceAllocation: {namespaces: [Bad_NS]}", "spec.serviceAllocation.namespaces[0]"),
		bad("pool sharing namespace invalid", pool, "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: [Bad_NS]}", "spec.sharing.acrossNamespaces: each entry must be a namespace name or \"*\""),
		bad("pool sharing star among names", pool, "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: ['*', team-a]}", "spec.sharing.acrossNamespaces: \"*\" (every namespace) must be the only entry"),
		bad("pool sharing empty", pool, "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: []}", "spec.sharing.acrossNamespaces"),
		bad("pool local fallback unknown", pool, "addresses: [198.51.100.0/27]\nsharing: {localFallback: Some}", "localFallback"),
		bad("pool autoAssign not a bool", pool, "addresses: [198.51.100.0/27]\nautoAssign: maybe", "spec.autoAssign"),
		bad("peer ASN zero", peer, "myASN: 0\npeerASN: 64512\npeerAddress: 198.51.100.1", "spec.myASN"),
		bad("peer ASN too big", peer, "myASN: 64513\npeerASN: 4294967296\npeerAddress: 198.51.100.1", "spec.peerASN"),
		bad("peer address not an IP", peer, "myASN: 64513\npeerASN: 64512\npeerAddress: router.example", "spec.peerAddress must be an IPv4 or IPv6 address"),
		bad("peer port zero", peer, okPeer+"peerPort: 0", "spec.peerPort"),
		bad("peer port too big", peer, okPeer+"peerPort: 70000", "spec.peerPort"),
		bad("peer hold time 1s", peer, okPeer+"holdTime: 1s", "spec.holdTime must be between 3s and 65535s"),
		bad("peer hold time 0", peer, okPeer+"holdTime: 0s", "spec.holdTime must be between 3s and 65535s"),
		bad("peer hold time fractional", peer, okPeer+"holdTime: 3500ms", "spec.holdTime must be whole seconds"),
		bad("peer connect time 1s", peer, okPeer+"connectTime: 1s", "spec.connectTime must be between 2s and 65535s"),
		bad("peer keepalive not below hold", peer, okPeer+"holdTime: 9s\nkeepaliveTime: 9s", "spec.keepaliveTime must be less than spec.holdTime"),
		bad("peer keepalive fractional", peer, okPeer+"keepaliveTime: 500ms", "spec.keepaliveTime must be whole seconds"),
		bad("peer keepalive above default hold", peer, okPeer+"keepaliveTime: 120s", "spec.keepaliveTime must be less than spec.holdTime"),
		bad("peer connect time zero", peer, okPeer+"connectTime: 0s", "spec.connectTime must be between 2s and 65535s"),
		bad("peer router ID IPv6", peer, okPeer+"routerID: '2001:db8::1'", "spec.routerID must be an IPv4 address"),
		bad("peer source address garbage", peer, okPeer+"sourceAddress: eth0", "spec.sourceAddress must be an IPv4 or IPv6 address"),
		bad("peer source address other family", peer, okPeer+"sourceAddress: '2001:db8:1::11'", "spec.sourceAddress must be of the same IP family as spec.peerAddress"),
		bad("peer password and secret", peer, okPeer+"password: s3cret\npasswordSecret: tor", "spec.password and spec.passwordSecret are mutually exclusive"),
		bad("peer multihop on iBGP", peer, "myASN: 64512\npeerASN: 64512\npeerAddress: 198.51.100.1\nebgpMultiHop: true", "spec.ebgpMultiHop applies only to eBGP"),
		bad("peer bad secret name", peer, okPeer+"passwordSecret: Not_A_Name", "spec.passwordSecret"),
		bad("peer missing address", peer, "myASN: 64513\npeerASN: 64512", "spec.peerAddress"),
		bad("peer without address or interface", peer, "myASN: 64513\npeerASN: 64512", "spec.peerAddress and spec.interface are mutually exclusive, and one of them is required"),
		bad("peer with address and interface", peer, okPeer+"interface: eth1", "spec.peerAddress and spec.interface are mutually exclusive, and one of them is required"),
		bad("peer interface name too long", peer, "myASN: 64513\npeerASN: 64512\ninterface: averyveryverylongname", "spec.interface"),
		bad("peer interface name with slash", peer, "myASN: 64513\npeerASN: 64512\ninterface: 'eth0/1'", "spec.interface must be a Linux interface name"),
		bad("peer interface name with zone", peer, "myASN: 64513\npeerASN: 64512\ninterface: 'fe80::1%eth0'", "spec.interface must be a Linux interface name"),
		bad("peer interface with source address", peer, "myASN: 64513\npeerASN: 64512\ninterface: eth1\nsourceAddress: '2001:db8::11'", "spec.sourceAddress does not apply with spec.interface"),
		bad("peer interface with multihop", peer, "myASN: 64513\npeerASN: 64512\ninterface: eth1\nebgpMultiHop: true", "spec.ebgpMultiHop does not apply with spec.interface"),
		bad("peer interface in a VRF", peer, "myASN: 64513\ndynamicASN: external\ninterface: eth1\nvrf: red", "spec.vrf is not supported with spec.interface"),
		bad("peer interface passive", peer, "myASN: 64513\ndynamicASN: external\ninterface: eth1\npassive: true", "spec.passive does not apply with spec.interface"),
		bad("peer without peerASN or dynamicASN", peer, "myASN: 64513\npeerAddress: 198.51.100.1", "spec.peerASN and spec.dynamicASN are mutually exclusive, and one of them is required"),
		bad("peer with peerASN and dynamicASN", peer, okPeer+"dynamicASN: external", "spec.peerASN and spec.dynamicASN are mutually exclusive, and one of them is required"),
		bad("peer dynamicASN not a class", peer, "myASN: 64513\npeerAddress: 198.51.100.1\ndynamicASN: any", "spec.dynamicASN"),
		bad("peer multihop on dynamic iBGP", peer, "myASN: 64513\npeerAddress: 198.51.100.1\ndynamicASN: internal\nebgpMultiHop: true", "spec.ebgpMultiHop applies only to eBGP"),
		bad("peer passive not a bool", peer, okPeer+"passive: sometimes", "spec.passive"),
		bad("peer vrf too long", peer, okPeer+"vrf: a-very-long-vrf-name", "spec.vrf"),
		bad("peer vrf empty", peer, okPeer+"vrf: ''", "spec.vrf"),
		bad("peer vrf with a slash", peer, okPeer+"vrf: red/blue", "spec.vrf must be a Linux interface name"),
		bad("peer vrf with a space", peer, okPeer+"vrf: 'red blue'", "spec.vrf must be a Linux interface name"),
		bad("peer vrf starting with a dash", peer, okPeer+"vrf: -red", "spec.vrf must be a Linux interface name"),
		bad("peer vrf and passive", peer, okPeer+"vrf: red\npassive: true", "spec.passive is not supported with spec.vrf"),
		bad("peer vrf and bfdProfile", peer, okPeer+"vrf: red\nbfdProfile: fast", "spec.bfdProfile is not supported with spec.vrf"),
		bad("peer address family lower case", peer, okPeer+"addressFamilies: [ipv4]", "spec.addressFamilies[0]: Unsupported value"),
		bad("peer address family twice", peer, okPeer+"addressFamilies: [IPv4, IPv4]", "spec.addressFamilies[1]: Duplicate value"),
		bad("peer address families empty", peer, okPeer+"addressFamilies: []", "spec.addressFamilies"),
		bad("peer address families three", peer, okPeer+"addressFamilies: [IPv4, IPv6, IPv4]", "spec.addressFamilies"),
		bad("advertisement community 16-bit overflow", bgpAdv, "communities: ['65536:1']", "spec.communities: each entry must be a standard community"),
		bad("advertisement community garbage", bgpAdv, "communities: ['1:2:3']", "spec.communities: each entry must be a standard community"),
		bad("advertisement large community overflow", bgpAdv, "communities: ['large:1:2:4294967296']", "spec.communities: each entry must be a standard community"),
		bad("advertisement alias with capitals", bgpAdv, "communities: ['NoExport']", "spec.communities: each entry must be a standard community"),
		bad("advertisement aggregation above 32", bgpAdv, "aggregationLength: 33", "spec.aggregationLength"),
		bad("advertisement aggregation v6 above 128", bgpAdv, "aggregationLengthV6: 129", "spec.aggregationLengthV6"),
		bad("advertisement negative local pref", bgpAdv, "localPref: -1", "spec.localPref"),
		bad("advertisement unknown link bandwidth mode", bgpAdv, "linkBandwidth: Endpoints", "spec.linkBandwidth: must be None or ReadyLocalEndpoints"),
		bad("advertisement link bandwidth in lower case", bgpAdv, "linkBandwidth: none", "spec.linkBandwidth: must be None or ReadyLocalEndpoints"),
		bad("L2 interface name too long", l2Adv, "interfaces: [averyveryverylongname]", "spec.interfaces[0]"),
		bad("L2 interface with slash", l2Adv, "interfaces: ['eth0/1']", "spec.interfaces[0]"),
		bad("BFD receive interval too small", bfd, "receiveInterval: 5", "spec.receiveInterval"),
		bad("BFD multiplier too big", bfd, "detectMultiplier: 300", "spec.detectMultiplier"),
		bad("community value not a community", commAl, "communities: [{name: a, value: 'no'}]", "spec.communities[].value must be a standard community"),
		bad("community alias name invalid", commAl, "communities: [{name: 'A B', value: '1:2'}]", "spec.communities[0].name"),
		bad("community alias name with a leading digit", commAl, "communities: [{name: '1abc', value: '1:2'}]", "spec.communities[0].name"),
		bad("community without aliases", commAl, "communities: []", "spec.communities"),
		bad("speaker L2 address not an IP", spk, "l2: [{address: 198.51.100.300, interfaces: [eth0], since: '2026-01-01T00:00:00Z'}]", "address must be an IPv4 or IPv6 address"),
		bad("speaker L2 address twice", spk, "l2: [{address: 198.51.100.7, interfaces: [eth0], since: '2026-01-01T00:00:00Z'}, {address: 198.51.100.7, interfaces: [eth1], since: '2026-01-01T00:00:00Z'}]", "status.l2[1]"),
		bad("speaker L2 interface too long", spk, "l2: [{address: 198.51.100.7, interfaces: [averyveryverylongname], since: '2026-01-01T00:00:00Z'}]", "status.l2[0].interfaces[0]"),
		bad("speaker session without state", spk, "bgp: [{peer: tor}]", "status.bgp[0].state"),
	}
}

func TestCRDsRefuseInvalidObjectsNamingTheField(t *testing.T) {
	dc := dynamicClient(t)
	cases := invalidCases()
	if len(cases) < 30 {
		t.Fatalf("only %d invalid cases", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.kind, "invalid-"+strings.ToLower(tc.kind)+"-"+itoa(i), tc.spec)
			_, err := dc.Resource(gvr(tc.kind)).Create(context.Background(), obj, metav1.CreateOptions{})
			if err == nil {
				t.Fatalf("the API server accepted an invalid %s:\n%s", tc.kind, tc.spec)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error does not name the field/problem %q:\n%v", tc.wantMsg, err)
			}
		})
	}
}

func TestCRDsAcceptValidEdgeCases(t *testing.T) {
	dc := dynamicClient(t)
	valid := []struct{ kind, spec string }{
		{"IPAddressPool", "addresses: [198.51.100.10-198.51.100.10, 198.51.100.64/27, '2001:db8:ff::/120', '2001:db8::1-2001:db8::ff']"},
		{"IPAddressPool", "addresses: [198.51.100.9-198.51.100.200]\nserviceAllocation: {priority: 0, namespaces: [default]}"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: ['*']}"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: [team-a, team-b]}"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nsharing: {localFallback: None}"},
		{"IPAddressPool", "addresses: [198.51.100.0/27]\nsharing: {acrossNamespaces: [team-a], localFallback: SomePorts}"},
		{"BGPPeer", okPeer + "holdTime: 1m30s\nkeepaliveTime: 30s\nconnectTime: 2s"},
		{"BGPPeer", okPeer + "holdTime: 3s\nkeepaliveTime: 1s\nsourceAddress: 198.51.100.11\nrouterID: 198.51.100.11\nebgpMultiHop: true"},
		{"BGPPeer", "myASN: 4200000000\npeerASN: 64512\npeerAddress: '2001:db8:1::1'\npassword: s3cret"},
		{"BGPPeer", "myASN: 64512\npeerASN: 64512\npeerAddress: 198.51.100.1"}, // iBGP, ebgpMultiHop left out
		{"BGPPeer", "myASN: 64513\npeerAddress: 198.51.100.1\ndynamicASN: external\nebgpMultiHop: true\npassive: true"},
		{"BGPPeer", "myASN: 64513\npeerAddress: '2001:db8:1::1'\ndynamicASN: internal"},
		{"BGPPeer", okPeer + "vrf: red\npassive: false"},
		{"BGPPeer", okPeer + "vrf: vrf_tenant-1.2"},
		{"BGPPeer", okPeer + "vrf: '123456789012345'"},
		{"BGPPeer", "myASN: 64513\ninterface: eth1\ndynamicASN: external\nbfdProfile: fast\ngracefulRestart: true"},
		{"BGPPeer", "myASN: 64512\npeerASN: 64512\ninterface: enp1s0f0.100\nrouterID: 198.51.100.11\npeerPort: 1179"},
		{"BGPPeer", okPeer + "addressFamilies: [IPv6]"}, // IPv6 routes over an IPv4 session
		{"BGPPeer", "myASN: 64513\npeerASN: 64512\npeerAddress: '2001:db8:1::1'\naddressFamilies: [IPv6, IPv4]"},
		{"BGPPeer", "myASN: 64601\npeerASN: 64513\npeerAddress: 127.0.0.1\nsourceAddress: 127.0.0.2\npeerPort: 1790"}, // a node router over loopback
		{"BGPAdvertisement", "communities: ['0:0', '65535:65535', 'large:4294967295:0:1', 'my-alias']\naggregationLength: 24\naggregationLengthV6: 64\nlocalPref: 4294967295"},
		{"BGPAdvertisement", "linkBandwidth: ReadyLocalEndpoints"},
		{"BGPAdvertisement", "linkBandwidth: None"},
		{"BFDProfile", "receiveInterval: 10\ntransmitInterval: 60000\ndetectMultiplier: 2"},
		{"SpeakerStatus", "pod: herald-speaker-x7k2p\nsummary: {l2Addresses: 2, sessions: 1/2, prefixes: 1}\n" +
			"l2: [{address: 198.51.100.7, interfaces: [eth0], since: '2026-01-01T00:00:00Z'}, {address: '2001:db8::7', interfaces: [eth0, eth1], since: '2026-01-01T00:00:00Z'}]\n" +
			"bgp: [{peer: tor-u, interface: eth1, peerAddress: 'fe80::a8c1:abff:fe00:1', state: Established}, {peer: tor-a, peerAddress: 198.51.100.1, state: Established, since: '2026-01-01T00:00:00Z', peerASN: 64512, prefixes: [198.51.100.7/32]}, {peer: tor-b, state: Active, message: 'router AS 64513 refused'}]"},
	}
	for i, v := range valid {
		obj := object(t, v.kind, "valid-"+strings.ToLower(v.kind)+"-"+itoa(i), v.spec)
		if _, err := dc.Resource(gvr(v.kind)).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			t.Errorf("valid %s refused: %v\n%s", v.kind, err, v.spec)
		}
	}
}

func TestCRDsApplyDefaults(t *testing.T) {
	dc := dynamicClient(t)
	ctx := context.Background()
	got, err := dc.Resource(gvr("BGPPeer")).Create(ctx, object(t, "BGPPeer", "defaults-peer", okPeer), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if port, _, _ := unstructured.NestedInt64(got.Object, "spec", "peerPort"); port != 179 {
		t.Errorf("peerPort default = %d, want 179", port)
	}
	got, err = dc.Resource(gvr("IPAddressPool")).Create(ctx, object(t, "IPAddressPool", "defaults-pool", "addresses: [198.51.100.0/28]"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if auto, found, _ := unstructured.NestedBool(got.Object, "spec", "autoAssign"); !found || !auto {
		t.Errorf("autoAssign default = %v (found %v), want true", auto, found)
	}
	got, err = dc.Resource(gvr("BGPAdvertisement")).Create(ctx, object(t, "BGPAdvertisement", "defaults-adv", "peers: [a]"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode, _, _ := unstructured.NestedString(got.Object, "spec", "linkBandwidth"); mode != "None" {
		t.Errorf("linkBandwidth default = %q, want None", mode)
	}
}

func TestSamplesAreAccepted(t *testing.T) {
	dc := dynamicClient(t)
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "manifests", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			obj.SetName("sample-" + obj.GetName())
			_, err := dc.Resource(gvr(obj.GetKind())).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(f), obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

func TestPrinterColumns(t *testing.T) {
	want := map[string][]string{
		"ipaddresspools":    {"Addresses", "Auto Assign", "IPv4 Assigned", "IPv4 Available", "IPv6 Assigned", "IPv6 Available", "Valid"},
		"l2advertisements":  {"IP Address Pools", "Interfaces", "Valid"},
		"bgppeers":          {"Address", "Peer ASN", "My ASN", "BFD Profile", "Valid"},
		"bgpadvertisements": {"IP Address Pools", "Peers", "Valid"},
		"bfdprofiles":       {"Receive", "Transmit", "Multiplier"},
		"speakerstatuses":   {"Pod", "L2", "Sessions", "Prefixes", "Age"},
	}
	dc := dynamicClient(t)
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for plural, cols := range want {
		crd, err := crds.Get(context.Background(), plural+".herald.dev", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		have := map[string]bool{}
		for _, v := range versions {
			pcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "additionalPrinterColumns")
			for _, pc := range pcs {
				have[pc.(map[string]any)["name"].(string)] = true
			}
		}
		for _, c := range cols {
			if !have[c] {
				t.Errorf("%s: printer column %q missing", plural, c)
			}
		}
	}
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(testenv.Shared(t).AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

func gvr(kind string) schema.GroupVersionResource {
	plural := map[string]string{
		"IPAddressPool": "ipaddresspools", "L2Advertisement": "l2advertisements", "BGPPeer": "bgppeers",
		"BGPAdvertisement": "bgpadvertisements", "Community": "communities", "BFDProfile": "bfdprofiles",
		"SpeakerStatus": "speakerstatuses",
	}[kind]
	return schema.GroupVersionResource{Group: "herald.dev", Version: "v1beta1", Resource: plural}
}

func object(t *testing.T, kind, name, spec string) *unstructured.Unstructured {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatalf("test spec: %v", err)
	}
	field := "spec"
	if kind == "SpeakerStatus" {
		field = "status" // written by the speakers; no spec
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "herald.dev/v1beta1", "kind": kind,
		"metadata": map[string]any{"name": name}, field: s,
	}}
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			break
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func itoa(i int) string { return strconv.Itoa(i) }
