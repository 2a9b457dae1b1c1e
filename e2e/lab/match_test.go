package lab

import (
	"net"
	"testing"
	"time"
)

// TestMatchAnswers: a burst of answers read together answers as many of
// the probes after the MAC's last answer, oldest first (a stalled speaker
// answering its queue), or the latest ones from a MAC that had answered
// nothing; single answers stay where they were read, so a silence
// followed by prompt answers stays a gap; nothing is answered from more
// than AnswerWindow before.
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

	// A graceful hand-over on a busy machine (seen in CI): A answers 0-2,
	// is not scheduled while 3 and 4 are sent, B announces and answers
	// 5-7 at once, and A answers the two requests it read before B's
	// announcement in a burst that straddles probe 7's send. A answered 3
	// and 4 late; nobody answered twice.
	slow := probes(8)
	for i := range 3 {
		slow[i].Answers = []Answer{answer(macA, time.Duration(i)*10*time.Millisecond+time.Millisecond)}
	}
	for i := 5; i < 8; i++ {
		slow[i].Answers = []Answer{answer(macB, time.Duration(i)*10*time.Millisecond+500*time.Microsecond)}
	}
	slow[6].Answers = append(slow[6].Answers, answer(macA, 69900*time.Microsecond))
	slow[7].Answers = append(slow[7].Answers, answer(macA, 70100*time.Microsecond))
	got = matchAnswers(slow, AnswerWindow)
	if s := answered(got); s != "11111111" {
		t.Errorf("starved old owner at a hand-over: %s, want every probe answered once", s)
	}
	for i, want := range []string{"a", "a", "a", "a", "a", "b", "b", "b"} {
		if m := got[i].MACs(); len(m) != 1 || m[0][len(m[0])-1:] != want {
			t.Errorf("starved old owner at a hand-over: probe %d answered by %v, want %s", i, m, want)
		}
	}

	fresh := probes(6) // nobody for 0-5, then B's first answers in a burst
	fresh[5].Answers = []Answer{answer(macB, 52*time.Millisecond), answer(macB, 52100*time.Microsecond)}
	if s := answered(matchAnswers(fresh, AnswerWindow)); s != "....11" {
		t.Errorf("a new owner's first burst: %s, want ....11 (it fills no silence before it)", s)
	}

	old := probes(3) // a burst 2 s after the probes answers none of them twice over
	old[2].Answers = []Answer{answer(macA, 2*time.Second), answer(macA, 2*time.Second)}
	if s := answered(matchAnswers(old, AnswerWindow)); s != "..1" {
		t.Errorf("answers after the window: %s, want ..1", s)
	}
}
