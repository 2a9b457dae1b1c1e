package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ScrapeMetrics reads the Prometheus text endpoint http://addr/metrics
// (reachable from the root namespace) into "name{labels}" -> value.
func ScrapeMetrics(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", addr, err)
	}
	return parseMetrics(string(body)), nil
}

// ScrapeMetricsFrom reads http://addr/metrics from inside host's
// namespace: for endpoints on pod addresses, which the root namespace has
// no route to (the client reaches them through the router).
func (l *Lab) ScrapeMetricsFrom(ctx context.Context, host, addr string) (map[string]float64, error) {
	body, err := l.Exec(ctx, host, l.bin.labprobe, "http", "-url", "http://"+addr+"/metrics", "-timeout", "3s")
	if err != nil {
		return nil, fmt.Errorf("scraping %s from %s: %w", addr, host, err)
	}
	return parseMetrics(body), nil
}

// parseMetrics reads Prometheus text into "name{labels}" -> value.
func parseMetrics(body string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}
