package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestMigrateExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"migrate", "-f", "../internal/migrate/testdata/convert/bgp-basic.yaml"}, 0, "kind: BGPPeer"},
		{[]string{"migrate", "-f", "../internal/migrate/testdata/convert/unsupported.yaml"}, 3, "kind: IPAddressPool"},
		{[]string{"migrate", "--allow-partial", "-f", "../internal/migrate/testdata/convert/unsupported.yaml"}, 0, "name: future"},
		{[]string{"migrate", "-f", "../internal/migrate/testdata/convert/l2-basic.yaml", "-f", "-"}, 0, "first-pool"},
		{[]string{"migrate", "extra"}, 2, ""},
		{[]string{"frobnicate"}, 2, ""},
		{[]string{"status", "ip", "nonsense"}, 2, ""},
		{[]string{"drain"}, 2, ""},
		{[]string{"drain", "a", "b"}, 2, ""},
		{[]string{"undrain", "a", "b"}, 2, ""},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		stdin := strings.NewReader("apiVersion: metallb.io/v1beta1\nkind: L2Advertisement\nmetadata: {name: x, namespace: metallb-system}\n")
		code := run(context.Background(), c.args, stdin, &out, &errOut)
		if code != c.code || !strings.Contains(out.String(), c.out) {
			t.Errorf("%v: exit %d (want %d), output:\n%s\nstderr:\n%s", c.args, code, c.code, out.String(), errOut.String())
		}
	}
}

func TestParseFilter(t *testing.T) {
	for _, args := range [][]string{{"svc", "web"}, {"service", "shop/web"}, {"ip", "2001:db8::1"}, {"node", "a"}, nil} {
		if _, err := parseFilter(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, args := range [][]string{{"svc"}, {"pod", "x"}, {"ip", "x"}} {
		if _, err := parseFilter(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
