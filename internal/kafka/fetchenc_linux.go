//go:build linux

package kafka

import (
	"bufio"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cairn-io/cairn/internal/partition"
)

// writeFileRange sends a file range with sendfile(2) on the connection's descriptor,
// after flushing what w holds before it.
func writeFileRange(w *bufio.Writer, c net.Conn, s partition.FileRange) error {
	sc, ok := c.(syscall.Conn)
	if !ok || s.Len < sendfileMinBytes {
		return copyFileRange(w, s)
	}
	dst, err := sc.SyscallConn()
	if err != nil {
		return copyFileRange(w, s)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	src, err := s.File.SyscallConn()
	if err != nil {
		return err
	}
	off, left := s.Pos, s.Len
	var serr error
	cerr := src.Control(func(sfd uintptr) {
		werr := dst.Write(func(dfd uintptr) bool {
			for left > 0 {
				n, err := unix.Sendfile(int(dfd), int(sfd), &off, int(min(left, 1<<30)))
				if n > 0 {
					left -= int64(n)
				}
				switch {
				case err == unix.EAGAIN:
					return false // the socket is full: the poller waits until it drains
				case err == unix.EINTR:
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case n == 0:
					serr = errFileShrunk
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if serr != nil {
		return serr
	}
	return cerr
}
