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

// dupSysFile duplicates the file's descriptor, so reads can hand ranges of it to sendfile
// (see ReadBatchSlices).
func (f *osFile) dupSysFile() (*os.File, error) { return dupFile(f.f) }

// fsIocGetVersion is FS_IOC_GETVERSION: the inode's generation, which ext4, XFS and btrfs
// change whenever they reuse an inode number.
const fsIocGetVersion = 0x80087601

// fileID identifies the file f has open: its device, inode and the inode's generation
// where the filesystem has one (an inode number is soon reused once a file is removed, and
// timestamps are too coarse to tell two files created in a row apart).
func fileID(f *os.File) (id fileIdentity, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return id, err
	}
	var st unix.Statx_t
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_INO, &st)
		if serr == nil {
			id.gen, _ = unix.IoctlGetUint32(int(fd), fsIocGetVersion) // 0 where unsupported
		}
	}); err != nil {
		return id, err
	}
	if serr != nil {
		return id, &os.PathError{Op: "statx", Path: f.Name(), Err: serr}
	}
	id.dev, id.ino = uint64(st.Dev_major)<<32|uint64(st.Dev_minor), st.Ino
	return id, nil
}
