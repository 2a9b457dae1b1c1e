package migrate

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClusterNames(t *testing.T) {
	refs := []ref{{"b", "pool"}, {"a", "pool"}, {"a", "a-pool"}, {"a", "solo"}, {"c", "x"}, {"c", "X"}}
	got := clusterNames(refs, aliasName)
	want := map[ref]string{
		{"a", "pool"}: "a-pool-2", {"b", "pool"}: "b-pool", {"a", "a-pool"}: "a-pool", {"a", "solo"}: "solo",
		{"c", "x"}: "x-2", {"c", "X"}: "x",
	}
	for r, w := range want {
		if got[r] != w {
			t.Errorf("%v: %q, want %q", r, got[r], w)
		}
	}
	seen := map[string]bool{}
	for _, n := range got {
		if seen[n] {
			t.Errorf("name %s given twice", n)
		}
		seen[n] = true
	}
}

func TestAliasName(t *testing.T) {
	for in, want := range map[string]string{"NO_ADVERTISE": "no-advertise", "vpn-only": "vpn-only", "65535": "c-65535", "a..b": "a-b", "__x__": "x"} {
		if got := aliasName(in); got != want {
			t.Errorf("aliasName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHeraldRange(t *testing.T) {
	ok := map[string]string{
		"198.51.100.5/24": "198.51.100.0/24", " 198.51.100.1 - 198.51.100.9 ": "198.51.100.1-198.51.100.9",
		"2001:db8::1": "2001:db8::1/128", "2001:db8::/64": "2001:db8::/64", "198.51.100.7": "198.51.100.7/32",
	}
	for in, want := range ok {
		if got, err := heraldRange(in); err != nil || got != want {
			t.Errorf("heraldRange(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"198.51.100.9-198.51.100.1", "198.51.100.1-2001:db8::1", "x", "198.51.100.1-", ""} {
		if got, err := heraldRange(in); err == nil {
			t.Errorf("heraldRange(%q) = %q, want an error", in, got)
		}
	}
}

// FuzzConvert: any input either fails to decode with an error or
// converts without panicking into objects that serialize.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "convert", "*.yaml"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var src Source
		if err := src.AddYAML("fuzz", data); err != nil {
			return
		}
		res := Convert(&src, Options{})
		for _, o := range res.Objects {
			if _, err := Unstructured(o); err != nil {
				t.Fatalf("%T: %v", o, err)
			}
		}
	})
}
