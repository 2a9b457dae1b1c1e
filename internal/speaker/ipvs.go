package speaker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
)

// IPVSInterface is the dummy interface kube-proxy's IPVS mode binds every
// Service address to.
const IPVSInterface = "kube-ipvs0"

// ReasonIPVSWithoutStrictARP is the Node event's reason.
const ReasonIPVSWithoutStrictARP = "IPVSWithoutStrictARP"

// ARPSettings are the kernel's ARP sysctls that matter: arp_ignore 1 (answer
// only for addresses of the receiving interface) and arp_announce 2 (use the
// best local source address) are what kube-proxy sets with strictARP: true.
type ARPSettings struct{ Ignore, Announce int }

// ReadARPSettings reads the effective settings from a /proc/sys tree: the
// kernel uses the larger of conf/all and the interface's own value, so the
// smaller of those over the given interfaces (and "all") counts, at least
// conf/all's.
func ReadARPSettings(procSys fs.FS, ifaces ...string) (ARPSettings, error) {
	all, err := readConf(procSys, "all")
	if err != nil {
		return ARPSettings{}, err
	}
	eff := all
	for i, name := range ifaces {
		c, err := readConf(procSys, name)
		if err != nil {
			return ARPSettings{}, err
		}
		c = ARPSettings{max(c.Ignore, all.Ignore), max(c.Announce, all.Announce)}
		if i == 0 {
			eff = c
			continue
		}
		eff = ARPSettings{min(eff.Ignore, c.Ignore), min(eff.Announce, c.Announce)}
	}
	return eff, nil
}

func readConf(procSys fs.FS, iface string) (ARPSettings, error) {
	var s ARPSettings
	for _, f := range []struct {
		name string
		dst  *int
	}{{"arp_ignore", &s.Ignore}, {"arp_announce", &s.Announce}} {
		path := "net/ipv4/conf/" + iface + "/" + f.name
		data, err := fs.ReadFile(procSys, path)
		if err != nil {
			return s, fmt.Errorf("reading %s: %w", path, err)
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return s, fmt.Errorf("%s: %w", path, err)
		}
		*f.dst = v
	}
	return s, nil
}

// IPVSARPUnsafe says whether every node would answer ARP for Service
// addresses: kube-ipvs0 holds IPv4 addresses and the ARP settings are
// laxer than strict ARP's. IPv6 is not affected (NDP answers only for
// addresses of the receiving interface). The message says what to set.
func IPVSARPUnsafe(ipvsAddrs []netip.Addr, s ARPSettings) (bool, string) {
	v4 := 0
	for _, a := range ipvsAddrs {
		if a.Is4() {
			v4++
		}
	}
	if v4 == 0 || (s.Ignore >= 1 && s.Announce >= 2) {
		return false, ""
	}
	return true, fmt.Sprintf("kube-proxy runs in IPVS mode (%s holds %d IPv4 Service addresses) but arp_ignore=%d and arp_announce=%d: "+
		"every node answers ARP for load-balancer addresses, not only the one Herald elects. Set strictARP: true in kube-proxy's "+
		"configuration (ipvs.strictARP), or net.ipv4.conf.all.arp_ignore=1 and arp_announce=2", IPVSInterface, v4, s.Ignore, s.Announce)
}

// IPVSWatch checks the node's IPVS and ARP settings every Interval and
// reports a change to unsafe with a Warning event on the Node and the
// herald_speaker_ipvs_arp_unsafe gauge.
type IPVSWatch struct {
	NodeName string
	// ProcSys is /proc/sys; Interfaces the ones ARP is answered on (empty:
	// conf/all alone).
	ProcSys    fs.FS
	Interfaces []string
	// Addrs lists kube-ipvs0's addresses; nil reads them with netlink.
	Addrs    func() ([]netip.Addr, error)
	Interval time.Duration
	Recorder record.EventRecorder
	Logger   *slog.Logger
	gauge    prometheus.Gauge
	unsafe   bool
}

// NewIPVSWatch registers the gauge on reg (nil: not registered).
func NewIPVSWatch(w IPVSWatch, reg prometheus.Registerer) (*IPVSWatch, error) {
	w.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "herald", Subsystem: "speaker", Name: "ipvs_arp_unsafe",
		Help: "1 when kube-ipvs0 holds IPv4 Service addresses and arp_ignore/arp_announce are not set as kube-proxy's strictARP sets them (every node answers ARP)."})
	if reg != nil {
		if err := reg.Register(w.gauge); err != nil {
			return nil, err
		}
	}
	if w.Addrs == nil {
		w.Addrs = ipvsAddrs
	}
	if w.Interval == 0 {
		w.Interval = time.Minute
	}
	return &w, nil
}

// Run checks until ctx ends.
func (w *IPVSWatch) Run(ctx context.Context) {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		w.Check()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check runs one check and reports a change.
func (w *IPVSWatch) Check() {
	addrs, err := w.Addrs()
	if err != nil {
		w.Logger.Debug("reading kube-ipvs0 addresses", "error", err)
		return
	}
	var unsafe bool
	var msg string
	if len(addrs) > 0 {
		s, err := ReadARPSettings(w.ProcSys, w.Interfaces...)
		if err != nil {
			w.Logger.Warn("cannot read the ARP sysctls to check kube-proxy's IPVS mode", "error", err)
			return
		}
		unsafe, msg = IPVSARPUnsafe(addrs, s)
	}
	if unsafe {
		w.gauge.Set(1)
	} else {
		w.gauge.Set(0)
	}
	if unsafe && !w.unsafe {
		w.Logger.Warn(msg)
		if w.Recorder != nil {
			ref := &corev1.ObjectReference{Kind: "Node", Name: w.NodeName, UID: types.UID(w.NodeName)}
			w.Recorder.Event(ref, corev1.EventTypeWarning, ReasonIPVSWithoutStrictARP, msg)
		}
	}
	w.unsafe = unsafe
}

// ipvsAddrs reads kube-ipvs0's addresses; no such interface: none.
func ipvsAddrs() ([]netip.Addr, error) {
	link, err := netlink.LinkByName(IPVSInterface)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	list, err := netlink.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out, nil
}
