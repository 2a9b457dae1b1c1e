package probe

import (
	"context"
	"encoding/json"
	"time"
)

// HTTPTally counts who answered a run of requests: by pod and by node
// (the podserver's answer), and the requests that failed.
type HTTPTally struct {
	Pods   map[string]int `json:"pods"`
	Nodes  map[string]int `json:"nodes"`
	Errors int            `json:"errors"`
	// LastError is the last failure's text, for the log.
	LastError string `json:"lastError,omitempty"`
}

// HTTPCount fetches url n times one after the other, each on a new
// connection (a new source port: a router hashing on ports spreads them
// as new flows), and counts who answered.
func HTTPCount(ctx context.Context, url string, n int, timeout time.Duration) (HTTPTally, error) {
	t := HTTPTally{Pods: map[string]int{}, Nodes: map[string]int{}}
	for range n {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		body, err := Get(ctx, url, timeout)
		var a struct{ Pod, Node string }
		if err == nil {
			err = json.Unmarshal(body, &a)
		}
		if err != nil {
			t.Errors++
			t.LastError = err.Error()
			continue
		}
		t.Pods[a.Pod]++
		t.Nodes[a.Node]++
	}
	return t, nil
}
