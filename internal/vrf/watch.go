package vrf

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
)

// Watcher keeps a snapshot of the node's VRFs, read every Interval, and
// reports a change.
type Watcher struct {
	// Read lists the node's links; nil reads them with netlink.
	Read     func() ([]Link, error)
	Interval time.Duration // 5 s when 0
	Logger   *slog.Logger

	mu      sync.Mutex
	current Table
	key     string
	err     error // the last read's; the table is then the one before
}

// Current is the last snapshot read, and why the last read failed.
func (w *Watcher) Current() (Table, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current, w.err
}

// Refresh reads the links once and reports whether the table (or the
// read's failure) changed.
func (w *Watcher) Refresh() bool {
	read := w.Read
	if read == nil {
		read = ReadLinks
	}
	links, err := read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		changed := w.err == nil || w.err.Error() != err.Error()
		w.err = fmt.Errorf("reading the node's links: %w", err)
		return changed
	}
	t := FromLinks(links)
	key := t.Key()
	changed := key != w.key || w.err != nil
	w.current, w.key, w.err = t, key, nil
	return changed
}

// Run refreshes every Interval until ctx ends, calling onChange after a
// refresh that changed the table.
func (w *Watcher) Run(ctx context.Context, onChange func()) {
	every := w.Interval
	if every == 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.Refresh() {
			if w.Logger != nil {
				tab, err := w.Current()
				w.Logger.Debug("VRFs changed", "vrfs", tab.Key(), "error", err)
			}
			onChange()
		}
	}
}

// ReadLinks lists the node's links with their addresses, through netlink.
func ReadLinks() ([]Link, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	byIndex := map[int][]netip.Prefix{}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			byIndex[a.LinkIndex] = append(byIndex[a.LinkIndex], p)
		}
	}
	out := make([]Link, 0, len(links))
	for _, l := range links {
		at := l.Attrs()
		out = append(out, Link{Name: at.Name, Index: at.Index, Master: at.MasterIndex, Kind: l.Type(),
			Up: at.Flags&net.FlagUp != 0, Addrs: byIndex[at.Index]})
	}
	return out, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), bits), true
}
