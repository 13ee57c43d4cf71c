//go:build !linux

package storage

import (
	"os"
	"syscall"
)

func datasync(f *os.File) error { return f.Sync() }

// fileID identifies the file by device and inode only.
func fileID(f *os.File) (id fileIdentity, err error) {
	fi, err := f.Stat()
	if err != nil {
		return id, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id, nil
}
