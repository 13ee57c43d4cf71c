package partition

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-io/cairn/internal/kafkatest"
	"github.com/cairn-io/cairn/internal/storage"
)

// rootedFS is the real filesystem under root, so the harness's fixed paths land in a
// test's temporary directory.
type rootedFS struct {
	storage.FS
	root string
}

func (r rootedFS) p(name string) string { return filepath.Join(r.root, name) }

func (r rootedFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	return r.FS.OpenFile(r.p(name), flag, perm)
}
func (r rootedFS) Remove(name string) error    { return r.FS.Remove(r.p(name)) }
func (r rootedFS) RemoveAll(name string) error { return r.FS.RemoveAll(r.p(name)) }
func (r rootedFS) Rename(o, n string) error    { return r.FS.Rename(r.p(o), r.p(n)) }
func (r rootedFS) MkdirAll(name string, perm os.FileMode) error {
	return r.FS.MkdirAll(r.p(name), perm)
}
func (r rootedFS) ReadDir(name string) ([]string, error) { return r.FS.ReadDir(r.p(name)) }
func (r rootedFS) Stat(name string) (os.FileInfo, error) { return r.FS.Stat(r.p(name)) }
func (r rootedFS) SyncDir(name string) error             { return r.FS.SyncDir(r.p(name)) }

func readFiles(t *testing.T, r FetchResult) []byte {
	t.Helper()
	out := append([]byte(nil), r.Records...)
	for i := range r.Files.Len() {
		s := r.Files.Range(i)
		b := make([]byte, s.Len)
		if _, err := s.File.ReadAt(b, s.Pos); err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// FetchFiles answers every fetch as Fetch does, with file ranges on a real filesystem and
// with bytes where the files are in memory.
func TestFetchFilesAnswersAsFetch(t *testing.T) {
	for _, fs := range []struct {
		name  string
		fs    storage.FS
		files bool
	}{{"os", rootedFS{storage.OSFS(), t.TempDir()}, true}, {"mem", storage.NewMemFS(), false}} {
		t.Run(fs.name, func(t *testing.T) {
			h := &harness{t: t, fs: fs.fs}
			h.open(defaultConfig())
			t.Cleanup(func() { h.p.Close(); h.host.Close() })
			for i := range 5 {
				h.produce(kafkatest.Plain(1+i%3, int64(1000*i)).Bytes(), -1)
			}
			b := h.p.Boundaries()
			var served int64
			for off := int64(-1); off <= b.LastVisible+1; off++ {
				for _, maxBytes := range []int32{1, 200, 1 << 20} {
					for _, epoch := range []int32{-1, b.LeaderEpoch, b.LeaderEpoch + 1, b.LeaderEpoch - 1} {
						want := h.p.Fetch(off, maxBytes, epoch)
						got := h.p.FetchFiles(off, maxBytes, epoch)
						if got.Err != want.Err || got.HighWatermark != want.HighWatermark || got.LogStart != want.LogStart {
							t.Fatalf("FetchFiles(%d, %d, %d) = %+v, Fetch %+v", off, maxBytes, epoch, got, want)
						}
						if !bytes.Equal(readFiles(t, got), want.Records) || got.Size() != int64(len(want.Records)) {
							t.Fatalf("FetchFiles(%d, %d, %d): records differ from Fetch's", off, maxBytes, epoch)
						}
						if fs.files && len(got.Records) != 0 {
							t.Fatalf("FetchFiles on OS files answered with bytes")
						}
						if !fs.files && got.Files.Len() != 0 {
							t.Fatalf("FetchFiles on MemFS answered with file ranges")
						}
						served += got.Size()
						got.Release()
					}
				}
			}
			if served == 0 {
				t.Fatal("no fetch returned records")
			}
		})
	}
}
