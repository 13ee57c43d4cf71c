package kafkatest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cairn-io/cairn/internal/recordbatch"
)

// Codec is a RecordBatch compression codec (attributes bits 0-2).
type Codec int8

const (
	CodecNone   Codec = recordbatch.CodecNone
	CodecGzip   Codec = recordbatch.CodecGzip
	CodecSnappy Codec = recordbatch.CodecSnappy
	CodecLZ4    Codec = recordbatch.CodecLZ4
	CodecZstd   Codec = recordbatch.CodecZstd
)

// Codecs lists every compression codec, CodecNone first.
var Codecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func zstdInit() {
	var err error
	if zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression)); err != nil {
		panic(err)
	}
	if zstdDec, err = zstd.NewReader(nil); err != nil {
		panic(err)
	}
}

// Compress compresses a records section with c. It is written independently of the
// broker's codecs (standard library gzip, s2's snappy encoder, lz4 with block checksums,
// zstd at another level and window), so tests can check one against the other. It panics
// on failure.
func Compress(c Codec, plain []byte, xerial bool) []byte {
	var buf bytes.Buffer
	switch c {
	case CodecNone:
		return plain
	case CodecGzip:
		w := gzip.NewWriter(&buf)
		w.Write(plain)
		if err := w.Close(); err != nil {
			panic(err)
		}
	case CodecSnappy:
		if !xerial {
			return s2.EncodeSnappy(nil, plain)
		}
		buf.Write(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		for rest := plain; len(rest) > 0; {
			n := min(len(rest), 8<<10) // small chunks, so tests cross chunk boundaries
			blk := s2.EncodeSnappy(nil, rest[:n])
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
			buf.Write(blk)
			rest = rest[n:]
		}
	case CodecLZ4:
		w := lz4.NewWriter(&buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.BlockChecksumOption(true)); err != nil {
			panic(err)
		}
		w.Write(plain)
		if err := w.Close(); err != nil {
			panic(err)
		}
	case CodecZstd:
		zstdOnce.Do(zstdInit)
		return zstdEnc.EncodeAll(plain, nil)
	default:
		panic(fmt.Sprintf("kafkatest: unknown codec %d", c))
	}
	return buf.Bytes()
}

// Decompress undoes Compress (and any other producer's compression of c).
func Decompress(c Codec, data []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return data, nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	case CodecSnappy:
		if !bytes.HasPrefix(data, xerialMagic) {
			return s2.Decode(nil, data)
		}
		if len(data) < 16 {
			return nil, errors.New("short xerial header")
		}
		var out []byte
		for rest := data[16:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, errors.New("short xerial chunk")
			}
			n := int(binary.BigEndian.Uint32(rest))
			if n > len(rest)-4 {
				return nil, errors.New("xerial chunk beyond the data")
			}
			blk, err := s2.Decode(nil, rest[4:4+n])
			if err != nil {
				return nil, err
			}
			out = append(out, blk...)
			rest = rest[4+n:]
		}
		return out, nil
	case CodecLZ4:
		return io.ReadAll(lz4.NewReader(bytes.NewReader(data)))
	case CodecZstd:
		zstdOnce.Do(zstdInit)
		return zstdDec.DecodeAll(data, nil)
	}
	return nil, fmt.Errorf("kafkatest: unknown codec %d", c)
}

// Records decodes one RecordBatch v2 and its records (decompressing them) with kmsg, as a
// client would; a record's offset is rb.FirstOffset + its OffsetDelta. It checks that
// exactly NumRecords records are there.
func Records(batch []byte) (kmsg.RecordBatch, []kmsg.Record, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		return rb, nil, err
	}
	plain, err := Decompress(Codec(rb.Attributes&recordbatch.CodecMask), rb.Records)
	if err != nil {
		return rb, nil, err
	}
	var recs []kmsg.Record
	for len(plain) > 0 {
		n, w := binary.Varint(plain)
		if w <= 0 || n < 0 || int(n) > len(plain)-w {
			return rb, nil, errors.New("bad record length")
		}
		var r kmsg.Record
		if err := r.ReadFrom(plain[:w+int(n)]); err != nil {
			return rb, nil, err
		}
		recs = append(recs, r)
		plain = plain[w+int(n):]
	}
	if len(recs) != int(rb.NumRecords) {
		return rb, nil, fmt.Errorf("%d records, NumRecords %d", len(recs), rb.NumRecords)
	}
	return rb, recs, nil
}
