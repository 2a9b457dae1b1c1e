package pktstamp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestReaderKeepsArrivalTime sends a frame on the loopback of a
// network namespace of its own, reads it only after a pause, as a
// descheduled prober would, and checks that the time read is when the
// frame arrived, not when it was read.
func TestReaderKeepsArrivalTime(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	runtime.LockOSThread() // the thread stays in the new namespace and dies with it
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		t.Fatalf("new network namespace: %v", err)
	}
	defer ns.Close()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	ifi, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := packet.Listen(ifi, packet.Raw, int(ethernet.EtherTypeARP), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd, err := NewReader(conn)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := arpRequest(net.HardwareAddr{2, 0, 0, 0, 0, 1}, netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1600)
	if _, _, ok, err := rd.ReadPending(buf); ok || err != nil {
		t.Fatalf("ReadPending on an idle socket = %v, %v; want nothing", ok, err)
	}
	// The kernel turns receive timestamps on for the whole machine from a
	// work queue (net_enable_timestamp defers the static key), so frames
	// that arrive just after SO_TIMESTAMPNS is set may still be stamped
	// only when read. Send until one is stamped on arrival; every later
	// frame is.
	deadline := time.Now().Add(5 * time.Second)
	for attempt := 1; ; attempt++ {
		drainPending(t, rd, buf)
		sent := time.Now()
		if _, err := conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])}); err != nil {
			t.Fatal(err)
		}
		sentDone := time.Now()
		// The pause stands for a reader scheduled late; its length is
		// not what is tested.
		time.Sleep(20 * time.Millisecond)
		readAt := time.Now()
		n, at, ok, err := rd.ReadPending(buf)
		if err != nil || !ok {
			t.Fatalf("ReadPending after sending = %v, %v; want the frame", ok, err)
		}
		if n != len(frame) {
			t.Errorf("read %d bytes, sent %d", n, len(frame))
		}
		if !at.Before(sent) && at.Before(readAt) && !at.After(sentDone) {
			t.Logf("frame %d stamped on arrival", attempt)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d frames in 5 s, the last stamped %v after sending began, sending took %v, read %v after: want the arrival time, within the send",
				attempt, at.Sub(sent), sentDone.Sub(sent), readAt.Sub(sent))
		}
	}
	// Blocking reads honour the deadline and stamp the same way.
	if err := conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rd.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read on an idle socket = %v, want a deadline error", err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	drainPending(t, rd, buf)
	sent := time.Now()
	if _, err := conn.WriteTo(frame, &packet.Addr{HardwareAddr: net.HardwareAddr(frame[0:6])}); err != nil {
		t.Fatal(err)
	}
	sentDone := time.Now()
	_, at, err := rd.Read(buf)
	readDone := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	// Within the send on a quiet machine; a busy one defers the
	// loopback's softirq (ksoftirqd), and the frame then arrives, and
	// is read, after the send returned. Either way it is stamped between
	// the send and the read's return, and the loop above has shown that
	// the stamp is the arrival, not the read.
	if at.Before(sent) || at.After(readDone) {
		t.Errorf("blocking read stamped the frame %v after sending began; sending took %v, reading returned %v after it began",
			at.Sub(sent), sentDone.Sub(sent), readDone.Sub(sent))
	}
}

// drainPending reads whatever frames the socket already holds.
func drainPending(t *testing.T, rd *Reader, buf []byte) {
	t.Helper()
	for {
		_, _, ok, err := rd.ReadPending(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
	}
}

// arpRequest is a broadcast who-has target from sender.
func arpRequest(mac net.HardwareAddr, sender, target netip.Addr) ([]byte, error) {
	pkt, err := arp.NewPacket(arp.OperationRequest, mac, sender, ethernet.Broadcast, target)
	if err != nil {
		return nil, err
	}
	payload, err := pkt.MarshalBinary()
	if err != nil {
		return nil, err
	}
	f := ethernet.Frame{Destination: ethernet.Broadcast, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: payload}
	return f.MarshalBinary()
}
