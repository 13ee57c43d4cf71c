//go:build !linux

package kafka

import (
	"bufio"
	"net"

	"github.com/cairn-io/cairn/internal/storage"
)

// writeFileSlice copies the range through w: sendfile is used on Linux only (and the
// storage layer only hands out file ranges there).
func writeFileSlice(w *bufio.Writer, _ net.Conn, s storage.FileSlice) error {
	return copyFileSlice(w, s)
}
