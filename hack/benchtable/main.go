// Command benchtable reads `go test -bench` output on stdin and prints the
// scale figures as one table, each next to its goal (issue 16's table):
//
//	go test -run '^$' -bench . ./internal/controller/ | go run ./hack/benchtable
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// goals by unit: the bound and whether smaller is better.
var goals = map[string]string{
	"x-floor":         "≤ 1.5",
	"x-floor-mean":    "≤ 1.5",
	"first-write-ms":  "≤ 200",
	"detect-p99-ms":   "≤ 1500",
	"false-deaths":    "0",
	"announce-p99-ms": "≤ 200",
	"s-to-frr-fib":    "bound by the router",
}

// shown are the units printed, in this order.
var shown = []string{"all-assigned-s", "floor-s", "x-floor", "floor-after-s", "x-floor-mean",
	"floor-machine-cpu-ms/write", "machine-cpu-ms/svc", "x-floor-machine-cpu", "sync-ms", "first-write-ms", "writes-s", "rss-MiB",
	"peak-rss-MiB", "anon-MiB", "ready-s", "ns/op", "B/op", "detect-p50-ms", "detect-p99-ms", "false-deaths", "suspicions",
	"first-decision-ms", "first-status-ms", "idle-cpu-%", "churn-cpu-%", "cpu-ms/update", "announce-p50-ms", "announce-p99-ms",
	"s-apply", "s-to-frr-bgp", "s-to-frr-fib", "s-withdrawn-fib"}

func main() {
	fmt.Printf("%-52s %-26s %14s  %s\n", "benchmark", "figure", "value", "goal")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		metrics := map[string]string{}
		for i := 2; i+1 < len(f); i += 2 {
			metrics[f[i+1]] = f[i]
		}
		for _, unit := range shown {
			v, ok := metrics[unit]
			if !ok {
				continue
			}
			goal := goals[unit]
			if unit == "rss-MiB" && strings.HasPrefix(name, "Controller") && strings.Contains(name, "10000") {
				goal = "≤ 150"
			}
			if unit == "ns/op" {
				if ns, err := strconv.ParseFloat(v, 64); err == nil {
					unit, v = "ms/op", strconv.FormatFloat(ns/1e6, 'f', 2, 64)
				}
			}
			fmt.Printf("%-52s %-26s %14s  %s\n", name, unit, v, goal)
			name = ""
		}
	}
}
