// Command labprobe is the lab's packet prober, run inside a lab network
// namespace with `ip netns exec`. It prints JSON (see e2e/lab/probe):
//
//	labprobe arp     -i eth0 -target 198.51.100.64 [-window 300ms]
//	labprobe ndp     -i eth0 -target 2001:db8:1::64 [-window 300ms] [-dst-mac MAC]
//	labprobe monitor -i eth0 -target ADDR [-interval 20ms]   (until SIGTERM)
//	labprobe watch   -i br0                                  (until SIGTERM)
//	labprobe http    -url http://198.51.100.64:80/ [-timeout 3s]
//	labprobe httpmonitor -url URL [-interval 20ms] [-timeout 3s]   (until SIGTERM)
//	labprobe announce -i eth0 -target ADDR   (one gratuitous ARP / unsolicited NA)
//	labprobe garbage -i eth0 -target ADDR [-interval 5ms] [-n 20]   (malformed ARP, until SIGTERM)
//	labprobe spoof   -i eth0 -target ADDR -mac MAC   (claim ADDR for MAC, answer probes, until SIGTERM)
//	labprobe respond -i eth0 -target ADDR   (answer ARP requests for ADDR with eth0's MAC, until SIGTERM)
//
// arp and ndp print one JSON array of answers; monitor and watch print
// {"ready":true} once listening and then one record a line (garbage only
// the first); http prints
// the response body; httpmonitor one line per request (sent, ok, error).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/herald-lb/herald/e2e/lab/probe"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labprobe arp|ndp|monitor|watch|http|httpcount|httpmonitor|announce|garbage|spoof|respond [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "labprobe:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	ifname := fs.String("i", "eth0", "interface")
	target := fs.String("target", "", "address to probe")
	window := fs.Duration("window", 300*time.Millisecond, "how long to collect answers")
	interval := fs.Duration("interval", 20*time.Millisecond, "monitor: time between probes")
	dstMAC := fs.String("dst-mac", "", "ndp: send a unicast NS to this MAC")
	url := fs.String("url", "", "http: URL to fetch")
	timeout := fs.Duration("timeout", 3*time.Second, "http: request timeout")
	count := fs.Int("n", 20, "garbage: malformed frames sent every interval; httpcount: requests")
	spoofMAC := fs.String("mac", "", "spoof: the made-up MAC that claims the address")
	sources := fs.String("sources", "", "monitor: send the probes in turn from every address of this prefix (the interface's own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	emit := func(l probe.Line) { _ = enc.Encode(l) }
	switch cmd {
	case "arp", "ndp":
		return once(enc, *ifname, *target, *dstMAC, *window)
	case "monitor":
		addr, err := netip.ParseAddr(*target)
		if err != nil {
			return fmt.Errorf("-target: %w", err)
		}
		srcs, err := prefixAddrs(*sources)
		if err != nil {
			return fmt.Errorf("-sources: %w", err)
		}
		return probe.Monitor(ctx, *ifname, addr, *interval, srcs, emit)
	case "watch":
		return probe.Watch(ctx, *ifname, emit)
	case "announce":
		addr, err := netip.ParseAddr(*target)
		if err != nil {
			return fmt.Errorf("-target: %w", err)
		}
		return probe.Announce(*ifname, addr)
	case "garbage":
		addr, err := netip.ParseAddr(*target)
		if err != nil {
			return fmt.Errorf("-target: %w", err)
		}
		return probe.Garbage(ctx, *ifname, addr, *interval, *count, emit)
	case "spoof":
		addr, err := netip.ParseAddr(*target)
		if err != nil {
			return fmt.Errorf("-target: %w", err)
		}
		mac, err := net.ParseMAC(*spoofMAC)
		if err != nil {
			return fmt.Errorf("-mac: %w", err)
		}
		return probe.Spoof(ctx, *ifname, addr, mac, emit)
	case "respond":
		addr, err := netip.ParseAddr(*target)
		if err != nil {
			return fmt.Errorf("-target: %w", err)
		}
		return probe.Respond(ctx, *ifname, addr, emit)
	case "httpmonitor":
		return probe.HTTPMonitor(ctx, *url, *interval, *timeout, func(t probe.HTTPTry) { _ = enc.Encode(t) })
	case "httpcount":
		tally, err := probe.HTTPCount(ctx, *url, *count, *timeout)
		if err != nil {
			return err
		}
		return enc.Encode(tally)
	case "http":
		body, err := probe.Get(ctx, *url, *timeout)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(body)
		return err
	}
	return errors.New("unknown command " + cmd)
}

func once(enc *json.Encoder, ifname, target, dstMAC string, window time.Duration) error {
	addr, err := netip.ParseAddr(target)
	if err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	var mac net.HardwareAddr
	if dstMAC != "" {
		if mac, err = net.ParseMAC(dstMAC); err != nil {
			return fmt.Errorf("-dst-mac: %w", err)
		}
	}
	answers, err := probe.Once(ifname, addr, mac, window)
	if err != nil {
		return err
	}
	return enc.Encode(answers)
}

// prefixAddrs lists every address of a prefix ("": none), at most 1,024.
func prefixAddrs(s string) ([]netip.Addr, error) {
	if s == "" {
		return nil, nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return nil, err
	}
	if p.Addr().BitLen()-p.Bits() > 10 {
		return nil, fmt.Errorf("%v has more than 1,024 addresses", p)
	}
	return probe.PrefixAddrs(p), nil
}
