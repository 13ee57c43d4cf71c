package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type benchDiskFlags struct {
	dir       string
	writeSize byteSize
	size      byteSize
}

func newBenchDiskCmd() *cobra.Command {
	var (
		bc benchCommon
		df = benchDiskFlags{writeSize: 1 << 20, size: 1 << 30}
	)
	cmd := &cobra.Command{
		Use:   "disk",
		Short: "Measure the disk's sequential write + fdatasync bandwidth (the physical baseline)",
		Long: `Disk measures what the disk under --dir sustains for a durable log: it appends
--write-size bytes to a new temporary file in --dir, calls fdatasync, and repeats, until
--size bytes were written or --duration passed. It reports MB/s (bytes made durable per
second) and the latency of each fdatasync, then removes the file.

Compare 'bench produce' against this figure measured on the broker's data folder.`,
		Example: `  cairn bench disk --dir ./cairn-data
  cairn bench disk --dir /var/lib/cairn --write-size 64KiB --size 256MiB --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchDisk(cmd, &bc, &df)
		},
	}
	bc.register(cmd.Flags(), 10*time.Second)
	fs := cmd.Flags()
	fs.StringVar(&df.dir, "dir", ".", "folder on the disk to measure")
	fs.Var(&df.writeSize, "write-size", "bytes written between two fdatasyncs")
	fs.Var(&df.size, "size", "stop after writing this many bytes")
	return cmd
}

func (df *benchDiskFlags) validate() error {
	if df.writeSize <= 0 {
		return fmt.Errorf("invalid --write-size %d: must be positive", df.writeSize)
	}
	if df.writeSize > 1<<30 {
		return fmt.Errorf("invalid --write-size %s: at most 1GiB", df.writeSize.String())
	}
	if df.size <= 0 {
		return fmt.Errorf("invalid --size %d: must be positive", df.size)
	}
	st, err := os.Stat(df.dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dir %s is not a folder", df.dir)
	}
	return nil
}

func runBenchDisk(cmd *cobra.Command, bc *benchCommon, df *benchDiskFlags) (retErr error) {
	if err := bc.validate(); err != nil {
		return err
	}
	if err := df.validate(); err != nil {
		return err
	}
	ctx, stopSignals := signalContext(cmdContext(cmd))
	defer stopSignals()

	f, err := os.CreateTemp(df.dir, "cairn-bench-disk-*.tmp")
	if err != nil {
		return fmt.Errorf("creating the test file: %w", err)
	}
	defer func() {
		cerr := f.Close()
		rerr := os.Remove(f.Name())
		if retErr == nil {
			retErr = errors.Join(cerr, rerr)
		}
	}()

	buf := make([]byte, int(df.writeSize))
	for i := range buf {
		buf[i] = byte(i*7 + 3)
	}
	var (
		written, syncs atomic.Int64
		lat            latencySet
		rec            = lat.add()
	)
	start := time.Now()
	var lastBytes, lastSyncs int64
	stopProgress := startProgress(&syncWriter{w: cmd.ErrOrStderr()}, start, func(el, iv time.Duration) string {
		b, s := written.Load(), syncs.Load()
		p99, n := lat.intervalQuantile(0.99)
		line := fmt.Sprintf("%v: %.1f MB/s, %.0f syncs/s", el, mbPerS(b-lastBytes, iv), perS(s-lastSyncs, iv))
		if n > 0 {
			line += ", fsync p99 " + fmtMs(p99)
		}
		lastBytes, lastSyncs = b, s
		return line
	})
	defer stopProgress()

	runCtx, cancel := context.WithTimeout(ctx, bc.duration)
	defer cancel()
	fd := int(f.Fd())
	var runErr error
	for written.Load() < int64(df.size) && runCtx.Err() == nil {
		chunk := buf[:min(int64(len(buf)), int64(df.size)-written.Load())]
		if _, err := f.Write(chunk); err != nil {
			runErr = fmt.Errorf("writing: %w", err)
			break
		}
		t := time.Now()
		if err := unix.Fdatasync(fd); err != nil {
			runErr = fmt.Errorf("fdatasync: %w", err)
			break
		}
		rec.record(time.Since(t), true)
		written.Add(int64(len(chunk)))
		syncs.Add(1)
	}
	el := time.Since(start)
	stopProgress()

	rep := &benchReport{
		Mode: "disk",
		Parameters: map[string]any{
			"dir":        df.dir,
			"write_size": int64(df.writeSize),
			"size":       int64(df.size),
			"duration_s": bc.duration.Seconds(),
		},
		DurationS:   round3(el.Seconds()),
		Interrupted: ctx.Err() != nil,
		Bytes:       written.Load(),
		MBPerS:      mbPerS(written.Load(), el),
		LatencyKind: "fdatasync",
		Syncs:       ptr(syncs.Load()),
		SyncsPerS:   ptr(perS(syncs.Load(), el)),
	}
	rep.latencySummary = lat.total().summary()
	if runErr != nil {
		rep.Errors, rep.FirstError = 1, runErr.Error()
	}
	if err := rep.write(cmd.OutOrStdout(), bc.json); err != nil {
		return err
	}
	return runErr
}
