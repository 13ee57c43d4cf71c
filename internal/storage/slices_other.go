//go:build !linux

package storage

import "os"

// dupFile is unsupported here; the read is then answered by ReadBatches.
func dupFile(*os.File) (*os.File, error) { return nil, ErrNoFileSlices }
