package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Get fetches url with a fresh connection (no keep-alive, so each call is
// a new flow for ECMP and kube-proxy) and returns the body of a 200 answer.
func Get(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// HTTPTry is one request of HTTPMonitor.
type HTTPTry struct {
	Sent  time.Time `json:"sent"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
}

// HTTPMonitor fetches url every interval (each request on a new
// connection, at most timeout long; a tick that falls inside a slow
// request is skipped) until ctx ends, and emits every try.
func HTTPMonitor(ctx context.Context, url string, interval, timeout time.Duration, emit func(HTTPTry)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		try := HTTPTry{Sent: time.Now()}
		if _, err := Get(ctx, url, timeout); err != nil {
			try.Error = err.Error()
		} else {
			try.OK = true
		}
		if ctx.Err() != nil {
			return nil
		}
		emit(try)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
