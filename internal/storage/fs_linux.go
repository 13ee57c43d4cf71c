//go:build linux

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): it writes the file's data and the metadata needed to read it
// back (the size), skipping timestamps; that is all a log needs.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}

// SysFile exposes the OS file, so reads can duplicate its descriptor and hand ranges of
// it to sendfile (see ReadBatchSlices).
func (f *osFile) SysFile() *os.File { return f.f }
