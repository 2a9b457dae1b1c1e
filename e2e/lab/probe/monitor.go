package probe

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"time"
)

// Monitor sends a probe for target every interval until ctx ends and
// emits each probe with the answers that arrived before the next one was
// sent. It emits Line{Ready: true} once the socket is open. Sending and
// reading happen in one loop, so an answer is never attributed to a probe
// sent after it arrived; and before a probe is closed, whatever the kernel
// has already received is read, so a monitor that was scheduled late does
// not count a timely answer as missing.
//
// With several sources (none: the interface's address), probe n is sent
// from srcs[(n-1) mod len(srcs)]. An ARP reply or NA names no request,
// but it is sent to the request's source: a late answer, read after later
// probes, then still says which probe it answers, as long as it is fewer
// than len(srcs) probes late (Probe.From, Answer.To).
func Monitor(ctx context.Context, ifname string, target netip.Addr, interval time.Duration, srcs []netip.Addr, emit func(Line)) error {
	p, err := NewProberFrom(ifname, target, nil, srcs)
	if err != nil {
		return err
	}
	defer p.Close()
	emit(Line{Ready: true})
	var cur *Probe
	next := time.Now()
	for seq := 0; ; {
		if !time.Now().Before(next) {
			if cur != nil {
				late, err := p.Pending()
				if err != nil {
					return err
				}
				cur.Answers = append(cur.Answers, late...)
				emit(Line{Probe: cur})
			}
			if ctx.Err() != nil {
				return nil
			}
			seq++
			i := (seq - 1) % len(p.srcs)
			cur = &Probe{Seq: seq, Sent: time.Now().UnixNano(), From: p.to(p.srcs[i]), Answers: []Answer{}}
			if err := p.SendFrom(i); err != nil {
				return err
			}
			next = next.Add(interval)
			if now := time.Now(); next.Before(now) {
				next = now.Add(interval)
			}
		}
		a, err := p.Next(next)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return err
		}
		cur.Answers = append(cur.Answers, a)
	}
}
