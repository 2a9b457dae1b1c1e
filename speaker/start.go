package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/herald-lb/herald/internal/daemon"
	"github.com/herald-lb/herald/internal/members"
)

// startBackoff paces the retries of a start condition that resolves by
// itself: quick at first (the controller creates the key's Secret within
// a second of its start), at most every 5 s, forever.
func startBackoff() daemon.Backoff {
	return daemon.Backoff{Initial: 250 * time.Millisecond, Max: 5 * time.Second}
}

// waitMembers is the condition /readyz names while the member list waits.
const waitMembers = "member list"

// nodeGetter reads a Node (lean.NodeClient).
type nodeGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
}

// memberStart is what starting the member list needs.
type memberStart struct {
	Key      members.KeySource
	Nodes    nodeGetter
	NodeName string
	// BindAddr is --memberlist-bind-addr (empty: the Node's InternalIP).
	BindAddr string
	Port     int
	Config   func(bind string, keys members.Keys) members.Config
	Log      *slog.Logger
	Health   *daemon.Health
	// Recorder and Pod: the Warning events on the speaker's Pod while it
	// waits (nil Recorder or empty Pod.Name: none).
	Recorder record.EventRecorder
	Pod      corev1.ObjectReference
	// Backoff paces the retries (zero: startBackoff); Sleep is their
	// clock (nil: daemon.Sleep).
	Backoff daemon.Backoff
	Sleep   func(context.Context, time.Duration) bool
}

// start starts the member list. A condition that resolves by itself (no
// key yet, no InternalIP yet) is retried with backoff for as long as it
// takes, the speaker not ready meanwhile, the reason in its log, in
// /readyz and in an event on its Pod; it becomes ready without a restart
// once the condition resolves. A condition that cannot (a malformed key,
// the port taken) returns an error marked daemon.Permanent at once.
func (m memberStart) start(ctx context.Context) (*members.Members, error) {
	var ml *members.Members
	var last string
	bo := m.Backoff
	if bo == (daemon.Backoff{}) {
		bo = startBackoff()
	}
	err := daemon.Retry(ctx, bo, m.Sleep, func(ctx context.Context) error {
		var err error
		ml, err = m.attempt(ctx)
		return err
	}, func(err error, failed int, next time.Duration) {
		reason := err.Error()
		if m.Health != nil {
			m.Health.Wait(waitMembers, reason)
		}
		if reason == last {
			m.Log.Debug("member list still waiting", "reason", reason, "attempts", failed, "next", next)
			return
		}
		last = reason
		m.Log.Warn("member list waiting; not ready until it starts", "reason", reason, "attempts", failed, "next", next)
		if m.Recorder != nil && m.Pod.Name != "" {
			m.Recorder.Eventf(&m.Pod, corev1.EventTypeWarning, "MemberListWaiting",
				"node %s: the member list waits (retrying; the speaker is not ready meanwhile): %s", m.NodeName, reason)
		}
	})
	if m.Health != nil {
		m.Health.Done(waitMembers)
	}
	if err != nil {
		return nil, err
	}
	if last != "" {
		m.Log.Info("member list started after waiting", "waitedFor", last)
	}
	return ml, nil
}

// attempt tries once; its errors are classified for start.
func (m memberStart) attempt(ctx context.Context) (*members.Members, error) {
	keys, from, err := m.Key.Read()
	if err != nil {
		return nil, fmt.Errorf("member-list key (--memberlist-key-file=%s, mounted from the Secret --memberlist-secret=%q): %w", m.Key.File, m.Key.Secret, err)
	}
	if from != "file" {
		m.Log.Info("member-list key read from its Secret; the kubelet has not filled the volume with it yet", "from", from, "secret", m.Key.Secret, "file", m.Key.File)
	}
	bind := m.BindAddr
	if bind == "" {
		if bind, err = nodeAddress(ctx, m.Nodes, m.NodeName); err != nil {
			return nil, err
		}
	}
	ml, err := members.New(m.Config(bind, keys))
	if err != nil {
		return nil, daemon.Permanent(membersStartError(err, bind, m.Port))
	}
	return ml, nil
}

// membersStartError says why the member list could not start; it is
// never retried: another program on the port, or an address that is not
// the node's, stays so until an operator acts.
func membersStartError(err error, bind string, port int) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("member-list port %d on %s is taken by another program (set --memberlist-port, the chart's speaker.memberlistPort): %w", port, bind, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return fmt.Errorf("member-list address %s is not this node's (--memberlist-bind-addr): %w", bind, err)
	}
	return err
}

// nodeAddress reads the node's first InternalIP (IPv4 preferred). A Node
// not there yet, without an InternalIP yet, or an API server not answering
// resolve by themselves; being forbidden to read it does not.
func nodeAddress(ctx context.Context, nodes nodeGetter, name string) (string, error) {
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "", daemon.Permanent(fmt.Errorf("reading node %s for the member list's address: %w", name, err))
	case err != nil:
		return "", fmt.Errorf("reading node %s for the member list's address: %w", name, err)
	}
	var addr string
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && (addr == "" || ip.Is4()) {
			addr = a.Address
		}
	}
	if addr == "" {
		return "", fmt.Errorf("node %s has no InternalIP address yet to bind the member list to (set --memberlist-bind-addr otherwise)", name)
	}
	return addr, nil
}
