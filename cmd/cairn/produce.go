package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

type produceFlags struct {
	clientFlags
	keySep      string
	partition   int32
	acks        string
	compression string
	verbose     bool
	timeout     time.Duration
}

func newProduceCmd() *cobra.Command {
	pf := &produceFlags{}
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce stdin lines as records to a topic",
		Long: `Produce reads standard input line by line and writes each line as one record
to TOPIC. With --key-separator, a line is split at the first separator into the
record key and value (a line without the separator has no key).

On end of input (or ^C) it waits for every record to be acknowledged and exits
non-zero if any record failed. It prints nothing on success unless -v is given,
in which case it prints partition@offset for each record as it is acknowledged.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProduce(cmd, pf, args[0])
		},
	}
	pf.register(cmd, false)
	fs := cmd.Flags()
	fs.StringVarP(&pf.keySep, "key-separator", "k", "", "split each line at the first SEP into key and value")
	fs.Int32Var(&pf.partition, "partition", -1, "partition to produce to (-1: chosen by the client partitioner)")
	fs.StringVar(&pf.acks, "acks", "all", "required acks: all, 1 or 0 (idempotent writes only with all)")
	fs.StringVar(&pf.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.BoolVarP(&pf.verbose, "verbose", "v", false, "print partition@offset for every acknowledged record")
	fs.DurationVar(&pf.timeout, "timeout", defaultAdminTimeout, "give up on a record not acknowledged within this time (0: never)")
	return cmd
}

// producerOpts translates the produce flags into franz-go options.
func (pf *produceFlags) producerOpts(cmd *cobra.Command) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch strings.ToLower(pf.acks) {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1", "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0", "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("invalid --acks %q: want all, 1 or 0", pf.acks)
	}
	codec, err := parseCompression(pf.compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if pf.partition < -1 {
		return nil, fmt.Errorf("invalid --partition %d: want a partition number or -1", pf.partition)
	}
	if pf.partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	if cmd.Flags().Changed("key-separator") && pf.keySep == "" {
		return nil, errors.New("--key-separator must not be empty")
	}
	if pf.timeout < 0 {
		return nil, fmt.Errorf("invalid --timeout %v: must not be negative", pf.timeout)
	}
	if pf.timeout > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(pf.timeout))
	}
	return opts, nil
}

func parseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(s) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	default:
		return kgo.CompressionCodec{}, fmt.Errorf("invalid --compression %q: want none, gzip, snappy, lz4 or zstd", s)
	}
}

// splitKey splits a line into key and value at the first sep. With no sep, or
// when the line does not contain it, the whole line is the value and the key
// is nil (no key).
func splitKey(line []byte, sep string) (key, value []byte) {
	if sep != "" {
		if k, v, ok := bytes.Cut(line, []byte(sep)); ok {
			return k, v
		}
	}
	return nil, line
}

type inputLine struct {
	data []byte
	err  error
}

// readLines sends every line of r (without its "\n" or "\r\n") to the returned
// channel, then a final read error if there was one other than EOF, then
// closes it. A last line without a newline still counts; lines of any length
// are accepted.
func readLines(r io.Reader, done <-chan struct{}) <-chan inputLine {
	ch := make(chan inputLine)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				line = bytes.TrimSuffix(line, []byte("\n"))
				line = bytes.TrimSuffix(line, []byte("\r"))
				select {
				case ch <- inputLine{data: line}:
				case <-done:
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					select {
					case ch <- inputLine{err: err}:
					case <-done:
					}
				}
				return
			}
		}
	}()
	return ch
}

func runProduce(cmd *cobra.Command, pf *produceFlags, topic string) error {
	if topic == "" {
		return errors.New("topic name must not be empty")
	}
	opts, err := pf.producerOpts(cmd)
	if err != nil {
		return err
	}
	cl, err := pf.newClient(cmd, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, stop := signalContext(cmdContext(cmd))
	defer stop()

	out := cmd.OutOrStdout()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards out and the counters below
		failed   int
		firstErr error
		firstNum int
		sent     int
		outErr   error
	)
	noOffsets := pf.acks == "0" || strings.EqualFold(pf.acks, "none")

	done := make(chan struct{})
	defer close(done)
	lines := readLines(cmd.InOrStdin(), done)
	var readErr error
read:
	for {
		select {
		case <-ctx.Done():
			break read // ^C ends the input; still deliver what was read
		case l, ok := <-lines:
			if !ok {
				break read
			}
			if l.err != nil {
				readErr = l.err
				break read
			}
			sent++
			num := sent
			key, value := splitKey(l.data, pf.keySep)
			rec := &kgo.Record{Topic: topic, Key: key, Value: value}
			if pf.partition >= 0 {
				rec.Partition = pf.partition
			}
			wg.Add(1)
			cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr, firstNum = err, num
					}
					return
				}
				if pf.verbose && outErr == nil {
					if noOffsets {
						_, outErr = fmt.Fprintf(out, "%d@?\n", r.Partition)
					} else {
						_, outErr = fmt.Fprintf(out, "%d@%d\n", r.Partition, r.Offset)
					}
				}
			})
		}
	}

	// Flush is bounded by the record delivery timeout; with --timeout 0 a
	// second ^C (the handler is gone after the first) kills the process.
	flushErr := cl.Flush(context.Background())
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	switch {
	case readErr != nil:
		return fmt.Errorf("reading stdin after %d records: %w", sent, readErr)
	case failed > 0:
		return fmt.Errorf("%d of %d records failed; first (line %d): %w", failed, sent, firstNum, firstErr)
	case flushErr != nil:
		return fmt.Errorf("flushing records: %w", flushErr)
	case outErr != nil:
		return fmt.Errorf("writing output: %w", outErr)
	}
	return nil
}
