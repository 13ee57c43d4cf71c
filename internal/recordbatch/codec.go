package recordbatch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds the decompressed records of one batch: a batch whose records would
// inflate beyond it does not decode (its errors match ErrMalformed), so that a few bytes
// cannot make a decoder allocate without bound. A variable so tests can lower it.
var maxDecompressed = 256 << 20

// errTooLarge reports a batch whose records inflate beyond maxDecompressed.
var errTooLarge = errors.New("decompressed records too large")

// xerialMagic starts snappy data in the framing of the Java client's xerial snappy stream:
// the magic, a version and a minimum compatible version (both int32), then chunks of a
// big-endian int32 length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialChunk      = 32 << 10 // uncompressed bytes per chunk when writing
)

// Decompress returns a records section compressed with codec in plain form; for CodecNone
// it returns src itself. It fails, rather than allocate, for one that would inflate beyond
// the package's bound (256 MiB).
func Decompress(codec int, src []byte) ([]byte, error) {
	limit := maxDecompressed
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, err
		}
		defer gzipReaders.Put(zr)
		return readLimited(zr, limit)
	case CodecSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return unsnappyXerial(src, limit)
		}
		return unsnappyBlock(nil, src, limit)
	case CodecLZ4:
		zr := lz4Readers.Get().(*lz4.Reader)
		zr.Reset(bytes.NewReader(src))
		defer lz4Readers.Put(zr)
		return readLimited(zr, limit)
	case CodecZstd:
		return unzstd(src, limit)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// pooledWriter is a stream compressor that can be reused for another output.
type pooledWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressPooled compresses plain with a writer from pool, returning it afterwards.
func compressPooled(pool *sync.Pool, plain []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := pool.Get().(pooledWriter)
	defer pool.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(plain); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Compress compresses a plain records section with codec. For snappy it uses the framing
// of like, a batch's original compressed records: xerial chunks if like had them, else one
// raw block.
func Compress(codec int, plain, like []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return plain, nil
	case CodecGzip:
		return compressPooled(&gzipWriters, plain)
	case CodecSnappy:
		if !bytes.HasPrefix(like, xerialMagic) {
			return snappy.Encode(nil, plain), nil
		}
		out := make([]byte, xerialHeaderSize, xerialHeaderSize+len(plain)/2+64)
		copy(out, xerialMagic)
		be.PutUint32(out[8:], 1)  // version
		be.PutUint32(out[12:], 1) // minimum compatible version
		scratch := make([]byte, snappy.MaxEncodedLen(xerialChunk))
		for rest := plain; len(rest) > 0; {
			n := min(len(rest), xerialChunk)
			enc := snappy.Encode(scratch, rest[:n])
			out = be.AppendUint32(out, uint32(len(enc)))
			out = append(out, enc...)
			rest = rest[n:]
		}
		return out, nil
	case CodecLZ4:
		return compressPooled(&lz4Writers, plain)
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(plain, nil), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// Coder state is large (gzip's compressor is near a megabyte): reuse it.
var (
	gzipReaders sync.Pool // *gzip.Reader; New is unset because a reader needs valid input
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	// 64 KiB blocks, as the Java producer writes: every Kafka client reads them, and
	// decoding needs only a small buffer.
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err)
		}
		return w
	}}
)

// readLimited reads r to its end, failing once more than limit bytes come out.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, errTooLarge
	}
	return out, nil
}

// unsnappyBlock appends the decoding of one raw snappy block to dst.
func unsnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > limit-len(dst) {
		return nil, errTooLarge
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	dec, err := snappy.Decode(dst[start:], src)
	if err != nil {
		return nil, err
	}
	if len(dec) != n {
		return nil, errors.New("snappy: decoded length mismatch")
	}
	return dst, nil
}

func unsnappyXerial(src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize {
		return nil, errors.New("snappy: truncated xerial header")
	}
	out := []byte{}
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("snappy: truncated xerial chunk length")
		}
		n := int64(be.Uint32(rest))
		rest = rest[4:]
		if n > int64(len(rest)) {
			return nil, errors.New("snappy: xerial chunk beyond the data")
		}
		var err error
		if out, err = unsnappyBlock(out, rest[:n], limit); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

var (
	zstdOnce    sync.Once
	zstdDec     *zstd.Decoder
	zstdEnc     *zstd.Encoder
	zstdInitErr error
)

func zstdInit() {
	zstdDec, zstdInitErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(maxDecompressed)))
	if zstdInitErr != nil {
		return
	}
	// A small window keeps every decoder's memory low, whichever client reads the batch.
	zstdEnc, zstdInitErr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(64<<10))
}

func zstdEncoder() (*zstd.Encoder, error) {
	zstdOnce.Do(zstdInit)
	return zstdEnc, zstdInitErr
}

func unzstd(src []byte, limit int) ([]byte, error) {
	zstdOnce.Do(zstdInit)
	if zstdInitErr != nil {
		return nil, zstdInitErr
	}
	// DecodeAll sizes its output by the size a frame header claims; check the claim first
	// so that a few bytes cannot make it allocate up to the decoder's maximum.
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, err
	}
	if h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, errTooLarge
	}
	out, err := zstdDec.DecodeAll(src, nil)
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, errTooLarge
		}
		return nil, err
	}
	if len(out) > limit {
		return nil, errTooLarge
	}
	return out, nil
}

// XerialFramed reports whether a snappy records section is in the xerial stream framing of
// the Java client rather than one raw block.
func XerialFramed(section []byte) bool { return bytes.HasPrefix(section, xerialMagic) }
