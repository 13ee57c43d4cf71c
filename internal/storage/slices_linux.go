//go:build linux

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// dupFile duplicates f's descriptor (close-on-exec), so the duplicate keeps the file's
// bytes reachable after f is closed, unlinked or replaced by a rename.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, &os.PathError{Op: "dup", Path: f.Name(), Err: derr}
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
