package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/herald-lb/herald/e2e/lab/probe"
)

// HTTPCount sends n requests to http://addr:port/ from host, each on a
// new connection, one after the other, and counts which pods and nodes
// answered.
func (l *Lab) HTTPCount(ctx context.Context, host string, addr netip.Addr, port, n int) (probe.HTTPTally, error) {
	url := "http://" + netip.AddrPortFrom(addr, uint16(port)).String() + "/"
	out, err := l.Exec(ctx, host, l.bin.labprobe, "httpcount", "-url", url, "-n", strconv.Itoa(n), "-timeout", "3s")
	if err != nil {
		return probe.HTTPTally{}, fmt.Errorf("%d requests from %s: %w", n, host, err)
	}
	var t probe.HTTPTally
	if err := json.Unmarshal([]byte(out), &t); err != nil {
		return t, fmt.Errorf("parsing the tally of %s: %w", url, err)
	}
	return t, nil
}
