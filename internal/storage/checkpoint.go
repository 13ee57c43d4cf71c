package storage

import (
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The log start checkpoint (see Log start checkpoint in the package documentation) is
// written by the operations that move the log start and read only by recovery, which
// uses it to finish a deletion that a crash interrupted.

const ckptMagic = "CAIRNLSO"

func encodeCheckpoint(lso int64) []byte {
	b := make([]byte, 24)
	copy(b[0:8], ckptMagic)
	be.PutUint32(b[8:12], 1)
	be.PutUint64(b[12:20], uint64(lso))
	be.PutUint32(b[20:24], crc32.Checksum(b[:20], castagnoli))
	return b
}

func readCheckpoint(fs FS, dir string) (int64, bool, error) {
	b, err := ReadFile(fs, filepath.Join(dir, checkpointName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, false, nil
		}
		return 0, false, err
	}
	// The checkpoint is replaced atomically (rename), so a bad one means bit rot; the
	// segments' own base offsets still bound the log start from below.
	if len(b) != 24 || string(b[0:8]) != ckptMagic || be.Uint32(b[8:12]) != 1 ||
		be.Uint32(b[20:24]) != crc32.Checksum(b[:20], castagnoli) {
		return 0, false, nil
	}
	v := int64(be.Uint64(b[12:20]))
	if v < 0 {
		return 0, false, nil
	}
	return v, true, nil
}
