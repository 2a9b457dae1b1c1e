package lab

import (
	"net"
	"testing"
	"time"
)

// TestMatchAnswers: a burst of answers read together answers as many of
// the latest probes (a stalled speaker answering its queue); single
// answers stay where they were read, so a silence followed by prompt
// answers stays a gap; nothing is answered from more than AnswerWindow
// before.
func TestMatchAnswers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	macA, macB := net.HardwareAddr{2, 0, 0, 0, 0, 0xa}, net.HardwareAddr{2, 0, 0, 0, 0, 0xb}
	probes := func(n int) ProbeLog {
		var pl ProbeLog
		for i := range n {
			pl = append(pl, Probe{Seq: i, Sent: t0.Add(time.Duration(i) * 10 * time.Millisecond)})
		}
		return pl
	}
	answer := func(mac net.HardwareAddr, at time.Duration) Answer { return Answer{MAC: mac, At: t0.Add(at)} }
	answered := func(pl ProbeLog) string {
		b := make([]byte, len(pl))
		for i, p := range pl {
			switch len(p.MACs()) {
			case 0:
				b[i] = '.'
			case 1:
				b[i] = '1'
			default:
				b[i] = '2'
			}
		}
		return string(b)
	}

	stalled := probes(6)
	stalled[0].Answers = []Answer{answer(macA, time.Millisecond)}
	for i := range 5 { // probes 1-5 answered at once, 2 ms after probe 5
		stalled[5].Answers = append(stalled[5].Answers, answer(macA, 52*time.Millisecond+time.Duration(i)*100*time.Microsecond))
	}
	got := matchAnswers(stalled, AnswerWindow)
	if s := answered(got); s != "111111" {
		t.Errorf("stalled speaker: %s, want every probe answered", s)
	}
	if late := got.Late(10 * time.Millisecond); len(late) != 4 {
		t.Errorf("stalled speaker: %d late probes, want 4 (1-4)", len(late))
	}

	silent := probes(6) // nobody for probes 0-2, then B answers each
	for i := 3; i < 6; i++ {
		silent[i].Answers = []Answer{answer(macB, time.Duration(i)*10*time.Millisecond+time.Millisecond)}
	}
	if s := answered(matchAnswers(silent, AnswerWindow)); s != "...111" {
		t.Errorf("silence then answers: %s, want ...111", s)
	}

	hand := probes(3) // A's late answer to 0 read with B's answer to 1
	hand[1].Answers = []Answer{answer(macA, 11*time.Millisecond), answer(macB, 11*time.Millisecond)}
	hand[2].Answers = []Answer{answer(macB, 21*time.Millisecond)}
	got = matchAnswers(hand, AnswerWindow)
	if s := answered(got); s != ".21" {
		t.Errorf("hand-over: %s, want .21 (a single late answer stays where it was read)", s)
	}

	old := probes(3) // a burst 2 s after the probes answers none of them twice over
	old[2].Answers = []Answer{answer(macA, 2*time.Second), answer(macA, 2*time.Second)}
	if s := answered(matchAnswers(old, AnswerWindow)); s != "..1" {
		t.Errorf("answers after the window: %s, want ..1", s)
	}
}
