package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DiskSyncBandwidth measures what the disk under dir sustains for sequential appends that
// are each made durable before the next: it makes ceil(total/writeSize) writes of
// writeSize bytes (so at least total bytes), each followed by File.Sync (fdatasync on
// Linux), through the same FS code the log uses. It returns the throughput in bytes per
// second and the latency of every sync. The test file is removed afterwards.
// BenchmarkDiskBaseline uses it as the baseline the log's append+flush path is compared
// against. `cairn bench disk` does not: it measures the same thing with its own loop,
// bounded by --duration as well as --size.
func DiskSyncBandwidth(dir string, writeSize int, total int64) (bytesPerSec float64, syncLatencies []time.Duration, err error) {
	if writeSize <= 0 || total <= 0 {
		return 0, nil, fmt.Errorf("storage: DiskSyncBandwidth: writeSize %d and total %d must be positive", writeSize, total)
	}
	fs := OSFS()
	name := filepath.Join(dir, fmt.Sprintf("cairn-disk-bench-%d.tmp", os.Getpid()))
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		f.Close()
		fs.Remove(name)
	}()
	buf := make([]byte, writeSize)
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	n := (total + int64(writeSize) - 1) / int64(writeSize)
	syncLatencies = make([]time.Duration, 0, n)
	var off int64
	start := time.Now()
	for i := int64(0); i < n; i++ {
		if _, err := f.WriteAt(buf, off); err != nil {
			return 0, nil, err
		}
		off += int64(writeSize)
		t := time.Now()
		if err := f.Sync(); err != nil {
			return 0, nil, err
		}
		syncLatencies = append(syncLatencies, time.Since(t))
	}
	el := time.Since(start)
	return float64(off) / el.Seconds(), syncLatencies, nil
}
