package bgp

import (
	"context"
	"fmt"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// Failure returns why the embedded BGP server stopped working, or nil: a
// running server that does not answer a management call (its state, which
// costs nothing) within timeout, or answers with an error. GoBGP serves
// every call, and every session change, from one loop: a server that does
// not answer has stopped applying anything. With no server running (no
// session configured, or shut down) it returns nil.
func (s *Speaker) Failure(timeout time.Duration) error {
	g := s.currentServer()
	if g == nil {
		return nil
	}
	return answersWithin(timeout, func() error {
		_, err := g.srv.GetBgp(context.Background(), &api.GetBgpRequest{})
		return err
	})
}

// answersWithin runs call and returns its error, or an error when it has
// not returned within timeout. GoBGP's calls do not take a deadline: a
// call to a server that is stuck stays blocked in its own goroutine.
func answersWithin(timeout time.Duration, call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("BGP server: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("BGP server does not answer within %s", timeout)
	}
}
