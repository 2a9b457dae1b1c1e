package pktstamp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// Reader reads frames from a raw socket together with the time the
// kernel received them (SO_TIMESTAMPNS), not the time the reader got round
// to them. On a busy machine a prober may be descheduled for tens of
// milliseconds; with kernel timestamps its own lateness never reads as a
// late or missing answer from the node under test.
type Reader struct {
	rc  syscall.RawConn
	oob []byte
}

// NewReader turns on receive timestamps for c and reads through it.
// The read deadline set on c applies to Read.
func NewReader(c *packet.Conn) (*Reader, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw socket: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, fmt.Errorf("raw socket: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("turning on SO_TIMESTAMPNS: %w", serr)
	}
	return &Reader{rc: rc, oob: make([]byte, unix.CmsgSpace(16))}, nil
}

// Read blocks for the next frame until the socket's read deadline (an
// error wrapping os.ErrDeadlineExceeded after it).
func (s *Reader) Read(b []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, s.oob, unix.MSG_DONTWAIT)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	if rerr != nil {
		return 0, time.Time{}, fmt.Errorf("recvmsg: %w", rerr)
	}
	return n, s.stamp(oobn), nil
}

// ReadPending returns a frame the kernel has already received, if any,
// without blocking and whatever the read deadline: a reader that woke up
// late uses it to collect what arrived before it decides anything.
func (s *Reader) ReadPending(b []byte) (n int, at time.Time, ok bool, err error) {
	var oobn int
	var rerr error
	if err := s.rc.Control(func(fd uintptr) {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, s.oob, unix.MSG_DONTWAIT)
	}); err != nil {
		return 0, time.Time{}, false, err
	}
	if errors.Is(rerr, unix.EAGAIN) {
		return 0, time.Time{}, false, nil
	}
	if rerr != nil {
		return 0, time.Time{}, false, fmt.Errorf("recvmsg: %w", rerr)
	}
	return n, s.stamp(oobn), true, nil
}

// stamp returns the kernel's receive time from the control message, or
// now when the kernel sent none.
func (s *Reader) stamp(oobn int) time.Time {
	msgs, err := unix.ParseSocketControlMessage(s.oob[:oobn])
	if err != nil {
		return time.Now()
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec)
		}
	}
	return time.Now()
}
