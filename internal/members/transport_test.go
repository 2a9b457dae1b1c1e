package members

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func newTestTransport(t testing.TB) *transport {
	t.Helper()
	tr, err := newTransport("127.0.0.1", 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	return tr
}

func recvPacket(t testing.TB, tr *transport) *memberlist.Packet {
	t.Helper()
	select {
	case p := <-tr.PacketCh():
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no packet within 5 s")
		return nil
	}
}

// TestTransportPackets: packets arrive whole, each in its own buffer of
// its own size (the read buffer is never handed out), from the sender's
// address; both an IP:port and a host name reach the socket.
func TestTransportPackets(t *testing.T) {
	a, b := newTestTransport(t), newTestTransport(t)
	if a.port() == 0 || a.port() == b.port() {
		t.Fatalf("ports %d and %d", a.port(), b.port())
	}
	to := "127.0.0.1:" + strconv.Itoa(b.port())
	first, second := bytes.Repeat([]byte{1}, 1400), []byte("second")
	if _, err := a.WriteTo(first, to); err != nil {
		t.Fatal(err)
	}
	p1 := recvPacket(t, b)
	if _, err := a.WriteToAddress(second, memberlist.Address{Addr: "localhost:" + strconv.Itoa(b.port()), Name: "b"}); err != nil {
		t.Fatal(err)
	}
	p2 := recvPacket(t, b)
	if !bytes.Equal(p1.Buf, first) || cap(p1.Buf) > 2*len(first) {
		t.Errorf("first packet: %d bytes (cap %d), want the 1400 sent in a buffer of their size", len(p1.Buf), cap(p1.Buf))
	}
	if !bytes.Equal(p2.Buf, second) {
		t.Errorf("second packet %q, want %q", p2.Buf, second)
	}
	if want := "127.0.0.1:" + strconv.Itoa(a.port()); p1.From.String() != want {
		t.Errorf("from %s, want %s", p1.From, want)
	}
	if p1.Timestamp.IsZero() {
		t.Error("no receive time")
	}
}

// TestTransportStreams: a dialled stream is accepted and carries bytes.
func TestTransportStreams(t *testing.T) {
	a, b := newTestTransport(t), newTestTransport(t)
	c, err := a.DialTimeout("127.0.0.1:"+strconv.Itoa(b.port()), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("push-pull")); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	select {
	case s := <-b.StreamCh():
		got, _ := io.ReadAll(s)
		_ = s.Close()
		if string(got) != "push-pull" {
			t.Errorf("stream carried %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no stream accepted")
	}
}

// TestTransportAdvertiseAndShutdown: the advertised address is the one
// given, else the one bound; an unspecified bind needs one; Shutdown ends
// the loops and may be repeated.
func TestTransportAdvertiseAndShutdown(t *testing.T) {
	tr := newTestTransport(t)
	if ip, port, err := tr.FinalAdvertiseAddr("", 0); err != nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) || port != tr.port() {
		t.Errorf("bound: %v %d %v", ip, port, err)
	}
	if ip, port, err := tr.FinalAdvertiseAddr("198.51.100.11", 7947); err != nil || ip.String() != "198.51.100.11" || len(ip) != net.IPv4len || port != 7947 {
		t.Errorf("given: %v %d %v", ip, port, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("nonsense", 1); err == nil {
		t.Error("advertise address nonsense accepted")
	}
	any, err := newTransport("0.0.0.0", 0, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := any.FinalAdvertiseAddr("", 0); err == nil {
		t.Error("an unspecified bind address advertised without an address given")
	}
	done := make(chan error, 2)
	go func() { done <- any.Shutdown(); done <- any.Shutdown() }()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Shutdown did not return")
		}
	}
	if _, err := newTransport("not-an-ip", 0, slog.New(slog.DiscardHandler)); err == nil {
		t.Error("bind address not-an-ip accepted")
	}
}

// BenchmarkTransportReceive reports the bytes allocated per packet of
// 200 bytes received (memberlist's NetTransport: 65,536 and more).
func BenchmarkTransportReceive(b *testing.B) {
	a, r := newTestTransport(b), newTestTransport(b)
	to := "127.0.0.1:" + strconv.Itoa(r.port())
	pkt := bytes.Repeat([]byte{7}, 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.WriteTo(pkt, to); err != nil {
			b.Fatal(err)
		}
		if p := recvPacket(b, r); len(p.Buf) != len(pkt) {
			b.Fatalf("got %d bytes", len(p.Buf))
		}
	}
}
