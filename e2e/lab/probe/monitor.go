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
func Monitor(ctx context.Context, ifname string, target netip.Addr, interval time.Duration, emit func(Line)) error {
	p, err := NewProber(ifname, target, nil)
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
			cur = &Probe{Seq: seq, Sent: time.Now().UnixNano(), Answers: []Answer{}}
			if err := p.Send(); err != nil {
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
