package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// newBenchTCPCmd measures loopback TCP: the ceiling a consumer on the broker's machine can
// reach, which the consume row of docs/benchmarks.md is a ratio of.
func newBenchTCPCmd() *cobra.Command {
	var (
		bc    benchCommon
		chunk = byteSize(1 << 20)
	)
	cmd := &cobra.Command{
		Use:   "tcp",
		Short: "Measure loopback TCP bandwidth (the baseline for consume)",
		Long: `Tcp opens one loopback TCP connection, writes --write-size chunks into it from one
goroutine and reads them from another, and reports MB/s: what one connection on this
machine can carry, the ceiling for a consumer reading from a broker on the same host.`,
		Example: `  cairn bench tcp --duration 5s --json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bc.validate(); err != nil {
				return err
			}
			if chunk <= 0 || chunk > 1<<30 {
				return fmt.Errorf("invalid --write-size %d: from 1 byte to 1GiB", chunk)
			}
			return runBenchTCP(cmd, &bc, int(chunk))
		},
	}
	bc.register(cmd.Flags(), 5*time.Second)
	cmd.Flags().Var(&chunk, "write-size", "bytes per write")
	return cmd
}

func runBenchTCP(cmd *cobra.Command, bc *benchCommon, chunk int) error {
	ctx, stopSignals := signalContext(cmdContext(cmd))
	defer stopSignals()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	w, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer w.Close()
	r, ok := <-accepted
	if !ok {
		return fmt.Errorf("accepting the loopback connection failed")
	}
	defer r.Close()

	var read atomic.Int64
	readDone := make(chan error, 1)
	go func() {
		buf := make([]byte, chunk)
		for {
			n, err := r.Read(buf)
			read.Add(int64(n))
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				readDone <- err
				return
			}
		}
	}()
	start := time.Now()
	var last int64
	stopProgress := startProgress(&syncWriter{w: cmd.ErrOrStderr()}, start, func(el, iv time.Duration) string {
		b := read.Load()
		line := fmt.Sprintf("%v: %.1f MB/s", el, mbPerS(b-last, iv))
		last = b
		return line
	})
	defer stopProgress()
	runCtx, cancel := context.WithTimeout(ctx, bc.duration)
	defer cancel()
	buf := make([]byte, chunk)
	var runErr error
	for runCtx.Err() == nil {
		if _, err := w.Write(buf); err != nil {
			runErr = err
			break
		}
	}
	el := time.Since(start)
	w.Close()
	if err := <-readDone; err != nil && runErr == nil {
		runErr = err
	}
	stopProgress()
	rep := &benchReport{
		Mode:        "tcp",
		Parameters:  map[string]any{"write_size": chunk, "duration_s": bc.duration.Seconds()},
		DurationS:   round3(el.Seconds()),
		Interrupted: ctx.Err() != nil,
		Bytes:       read.Load(),
		MBPerS:      mbPerS(read.Load(), el),
	}
	if runErr != nil {
		rep.Errors, rep.FirstError = 1, runErr.Error()
	}
	if err := rep.write(cmd.OutOrStdout(), bc.json); err != nil {
		return err
	}
	return runErr
}
