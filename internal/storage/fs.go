package storage

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// FS is the filesystem seam. Everything the log persists goes through it, so tests can
// substitute MemFS, which loses whatever was not fsynced when it "crashes", and
// `cairn start --simulate-power-loss` PowerLossFS, which keeps the unsynced state in memory
// so that a kill -9 loses exactly what a power cut would.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(name string, perm os.FileMode) error
	// ReadDir returns the names (not paths) of the entries of a directory, sorted.
	ReadDir(name string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creates, removes, renames) durable.
	SyncDir(name string) error
}

// File is an open file. ReadAt follows io.ReaderAt (io.EOF when it reads short at the end).
// Sync makes the file's data (and the size needed to read it back) durable; it does not
// make the file's directory entry durable (that is FS.SyncDir).
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	Write(p []byte) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// OSFS returns the real filesystem. File.Sync uses fdatasync on Linux (fsync elsewhere);
// SyncDir opens the directory and fsyncs it.
// Its files hold a descriptor only while used, within a budget of half the process's
// descriptor limit (fdpool.go).
func OSFS() FS { return osFS{pool: defaultPool} }

type osFS struct{ pool *fdPool }

// osFile is a file that keeps its descriptor (one opened with O_APPEND).
type osFile struct{ f *os.File }

func (fs osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return fs.pool.openFile(name, flag, perm)
}

func (fs osFS) Remove(name string) error {
	if err := fs.pool.beforeRemove(name); err != nil {
		return err
	}
	return os.Remove(name)
}

func (fs osFS) RemoveAll(name string) error {
	if err := fs.pool.beforeRemove(name); err != nil {
		return err
	}
	return os.RemoveAll(name)
}

func (fs osFS) Rename(oldname, newname string) error      { return fs.pool.rename(oldname, newname) }
func (osFS) MkdirAll(name string, perm os.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (osFS) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error)  { return f.f.ReadAt(p, off) }
func (f *osFile) Write(p []byte) (int, error)              { return f.f.Write(p) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }
func (f *osFile) Truncate(size int64) error                { return f.f.Truncate(size) }
func (f *osFile) Close() error                             { return f.f.Close() }
func (f *osFile) Sync() error                              { return datasync(f.f) }

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// readFull reads exactly len(p) bytes at off, or reports io.ErrUnexpectedEOF.
func readFull(f File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// writeFileDurable writes data to name (create or truncate) and fsyncs it. The caller
// syncs the directory.
func writeFileDurable(fs FS, name string, data []byte) error {
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.WriteAt(data, 0); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileAtomic replaces name with data durably: temp file, fsync, rename, SyncDir. A
// crash at any point leaves either the old file or the new one. Every small file that must
// change whole (checkpoints, node metadata, Raft state) goes through it.
func WriteFileAtomic(fs FS, name string, data []byte) error {
	tmp := name + ".tmp"
	if err := writeFileDurable(fs, tmp, data); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(name))
}

// mkdirAllDurable creates dir and any missing parents, and syncs each parent that gained
// an entry, so a crash cannot make the directory vanish.
func mkdirAllDurable(fs FS, dir string) error {
	dir = filepath.Clean(dir)
	var missing []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fs.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
